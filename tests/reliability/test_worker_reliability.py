"""Real worker processes on the production profile (two manager replicas on PostgreSQL
behind one URL, auth on, each worker with its stage type's token): a SIGKILLed worker's
task is reclaimed, a signal stops every Worker of a process, an abort reaches running
handlers within a heartbeat, and a pause lets running tasks finish."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..support.api import unique
from ..support.deployment import Deployment
from ..support.invariants import assert_invariants_at
from ..support.processes import module_process
from ..support.profiles import production

pytestmark = pytest.mark.e2e

HEARTBEAT = 0.5
WITH_STAGES = {"should_return_stages": True}


@pytest.fixture(scope="module")
def profile(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    # The reaper every half second: a lease that runs out is seen at once.
    with production(
        request,
        tmp_path_factory.mktemp("reliability"),
        manager_env={"JOBNIK_MAINTENANCE_INTERVAL": "0.5"},
    ) as d:
        yield d


def admin(profile: Deployment) -> httpx.AsyncClient:
    """The test's own calls: creating, steering and reading jobs."""
    return httpx.AsyncClient(base_url=profile.url, headers=profile.headers("admin"))


@asynccontextmanager
async def scene(profile: Deployment) -> AsyncIterator[tuple[ExitStack, httpx.AsyncClient]]:
    """A test's stack (the workers it starts, stopped as it ends) and its admin client;
    once all is stopped, the database must keep its invariants."""
    with ExitStack() as stack:
        async with admin(profile) as http:
            yield stack, http
    await assert_invariants_at(profile.database_url)


@contextmanager
def marker_worker(
    profile: Deployment, stage_type: str, markers: Path, name: str, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    settings = {
        "MARKER_MANAGER": profile.url,
        "MARKER_TOKEN": profile.worker_token(stage_type) or "",
        "MARKER_STAGE_TYPES": stage_type,
        "MARKER_DIR": str(markers),
        "MARKER_NAME": name,
        "MARKER_HEARTBEAT": str(HEARTBEAT),
        **env,
    }
    log = markers / f"{name}.log"
    with module_process("tests.reliability.marker_worker", log, **settings) as proc:
        yield proc


def markers_of(markers: Path, event: str) -> dict[str, float]:
    """task id -> what its marker of this event holds (a time, or a heartbeat number)."""
    found = {}
    for path in markers.glob(f"*.{event}.*"):
        found[path.name.split(".")[0]] = float(path.read_text())
    return found


async def until(probe: Any, what: str, seconds: float = 60) -> Any:
    for _ in range(int(seconds / 0.05)):
        if result := await probe():
            return result
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def until_marked(markers: Path, event: str, count: int = 1) -> dict[str, float]:
    """Wait until exactly `count` tasks have left a marker of this event; return them."""

    async def probe() -> dict[str, float] | None:
        found = markers_of(markers, event)
        return found if len(found) == count else None

    return await until(probe, f"{count} task(s) {event}")  # type: ignore[no-any-return]


async def until_task_completed(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    async def completed() -> dict[str, Any] | None:
        task = (await http.get(f"/v1/tasks/{task_id}")).json()
        return task if task["status"] == "COMPLETED" else None

    return await until(completed, "the task to complete")  # type: ignore[no-any-return]


async def job_with_tasks(
    http: httpx.AsyncClient, stage_type: str, seconds: list[float], **task: Any
) -> dict[str, Any]:
    body = {
        "name": unique("rel"),
        "data": {},
        "stages": [
            {
                "type": stage_type,
                "data": {},
                "tasks": [{"data": {"seconds": s}, **task} for s in seconds],
            }
        ],
    }
    response = await http.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


async def one_task_running(
    stack: ExitStack,
    profile: Deployment,
    http: httpx.AsyncClient,
    kind: str,
    markers: Path,
    worker: str,
    max_attempts: int,
    **env: str,
) -> tuple[str, str, subprocess.Popen[bytes]]:
    """A job of one 3 s task of `kind`, started by a new marker worker named `worker`: the
    job's id, the task's, and the worker process."""
    job = await job_with_tasks(http, kind, [3], maxAttempts=max_attempts)
    proc = stack.enter_context(marker_worker(profile, kind, markers, worker, **env))
    await until_marked(markers, "started")
    return job["id"], job["stages"][0]["tasks"][0]["id"], proc


async def events(http: httpx.AsyncClient, job_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/v1/jobs/{job_id}/events", params={"page_size": 1000})
    return response.json()["items"]  # type: ignore[no-any-return]


async def handed_over(
    http: httpx.AsyncClient, job_id: str, task_id: str, first: str, second: str
) -> list[dict[str, Any]]:
    """The task's events, checked to be those of a task that worker `first` ran and
    handed back (or lost), and worker `second` completed; returned for a closer look."""
    log = [e for e in await events(http, job_id) if e.get("taskId") == task_id]
    assert [(e["fromStatus"], e["toStatus"], e["worker"]) for e in log] == [
        (None, "PENDING", None),
        ("PENDING", "IN_PROGRESS", first),
        ("IN_PROGRESS", "RETRIED", first),
        ("RETRIED", "IN_PROGRESS", second),
        ("IN_PROGRESS", "COMPLETED", second),
    ]
    return log


async def test_a_sigkilled_workers_task_is_reclaimed_and_its_late_report_refused(
    profile: Deployment, tmp_path: Path
) -> None:
    kind = unique("kill")
    async with scene(profile) as (stack, http):
        job_id, task_id, victim = await one_task_running(
            stack, profile, http, kind, tmp_path, "victim", max_attempts=3, MARKER_LEASE="2"
        )
        held = (await http.get(f"/v1/tasks/{task_id}")).json()
        assert held["worker"] == "victim" and held["status"] == "IN_PROGRESS"
        victim.send_signal(signal.SIGKILL)
        victim.wait()

        stack.enter_context(marker_worker(profile, kind, tmp_path, "rescuer", MARKER_LEASE="2"))
        done = await until_task_completed(http, task_id)
        assert done["worker"] == "rescuer" and done["attempts"] == 1
        late = await http.put(
            f"/v1/tasks/{task_id}/status",
            json={"status": "COMPLETED", "leaseId": held["leaseId"]},
        )
        assert late.status_code == 409 and late.json()["code"] == "LEASE_LOST"

        log = await handed_over(http, job_id, task_id, "victim", "rescuer")
        assert log[2]["reason"] == "lease expired"
        # Reaped once its lease had run out, not before.
        expiry = datetime.fromisoformat(held["leaseExpiresAt"])
        assert expiry <= datetime.fromisoformat(log[2]["time"])


async def test_sigterm_hands_a_last_attempt_back_to_another_worker(
    profile: Deployment, tmp_path: Path
) -> None:
    """A rolling restart: the task runs on its only attempt when its worker is told to
    stop; past the grace period the handler is cancelled and the task handed back with
    its attempts unchanged, another worker completes it, the job completes, and the
    stopped worker exits 0."""
    kind = unique("term")
    async with scene(profile) as (stack, http):
        job_id, task_id, leaving = await one_task_running(
            stack, profile, http, kind, tmp_path, "leaving", max_attempts=1, MARKER_GRACE="0.5"
        )
        leaving.send_signal(signal.SIGTERM)
        # It exits of itself once the grace period is over, well before the handler's
        # own end; the bound only keeps a failing test from hanging.
        assert leaving.wait(timeout=15) == 0
        assert task_id in markers_of(tmp_path, "cancelled")
        assert task_id not in markers_of(tmp_path, "finished")

        stack.enter_context(marker_worker(profile, kind, tmp_path, "staying"))
        done = await until_task_completed(http, task_id)
        assert done["worker"] == "staying" and done["attempts"] == 0
        assert (await http.get(f"/v1/jobs/{job_id}")).json()["status"] == "COMPLETED"
        log = await handed_over(http, job_id, task_id, "leaving", "staying")
        assert log[2]["reason"].startswith("handed back")


async def paired_workers_running(
    stack: ExitStack,
    profile: Deployment,
    http: httpx.AsyncClient,
    markers: Path,
    seconds: float,
    **env: str,
) -> tuple[list[str], subprocess.Popen[bytes]]:
    """A task of `seconds` for each of two stage types, both running in one process of
    two Workers (tests.reliability.paired_workers): the tasks' ids, and the process."""
    kinds = [unique("pair"), unique("pair")]
    jobs = [await job_with_tasks(http, kind, [seconds]) for kind in kinds]
    types = ",".join(kinds)
    token = profile.worker_token(types) or ""
    settings = {"MARKER_MANAGER": profile.url, "MARKER_STAGE_TYPES": types, **env}
    settings["JOBNIK_TOKEN"] = token
    settings |= {"MARKER_DIR": str(markers), "MARKER_HEARTBEAT": str(HEARTBEAT)}
    log = markers / "paired.log"
    proc = stack.enter_context(module_process("tests.reliability.paired_workers", log, **settings))
    await until_marked(markers, "started", 2)
    return [job["stages"][0]["tasks"][0]["id"] for job in jobs], proc


async def test_one_sigint_stops_both_workers_of_a_process(
    profile: Deployment, tmp_path: Path
) -> None:
    """Ctrl+C on a process running two Workers: both finish their running task, and the
    process exits 0 (it used to stop one of them and then ignore every signal)."""
    async with scene(profile) as (stack, http):
        task_ids, proc = await paired_workers_running(stack, profile, http, tmp_path, 1)
        proc.send_signal(signal.SIGINT)
        # The bound only keeps a failing test from hanging: the tasks end within 1 s.
        assert proc.wait(timeout=10) == 0
        assert set(markers_of(tmp_path, "finished")) == set(task_ids)
        for task_id in task_ids:
            assert (await http.get(f"/v1/tasks/{task_id}")).json()["status"] == "COMPLETED"


async def test_sigterm_after_sigint_stops_both_workers_at_once(
    profile: Deployment, tmp_path: Path
) -> None:
    """Two Workers in one process with an hour of grace: SIGINT has both wait for their
    running task; a SIGTERM then cancels both handlers, both tasks are handed back with
    no attempt spent, and the process exits 0."""
    async with scene(profile) as (stack, http):
        task_ids, proc = await paired_workers_running(
            stack, profile, http, tmp_path, 60, MARKER_GRACE="3600"
        )
        proc.send_signal(signal.SIGINT)
        await asyncio.sleep(0.5)
        assert proc.poll() is None, "the first signal waits for the running tasks"
        assert not markers_of(tmp_path, "cancelled")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert set(markers_of(tmp_path, "cancelled")) == set(task_ids)
        for task_id in task_ids:
            task = (await http.get(f"/v1/tasks/{task_id}")).json()
            assert (task["status"], task["attempts"]) == ("RETRIED", 0)


async def test_abort_reaches_running_handlers_within_one_heartbeat(
    profile: Deployment, tmp_path: Path
) -> None:
    kind = unique("abort")
    async with scene(profile) as (stack, http):
        job = await job_with_tasks(http, kind, [60] * 6)
        stack.enter_context(
            marker_worker(profile, kind, tmp_path, "w", MARKER_CONCURRENCY="4", MARKER_LEASE="5")
        )
        await until_marked(tmp_path, "started", 4)
        response = await http.put(f"/v1/jobs/{job['id']}/status", json={"status": "ABORTED"})
        assert response.status_code == 200
        cancelled = await until_marked(tmp_path, "cancelled", 4)
        # The first heartbeat whose answer asked to cancel them cancelled all four
        # handlers, before another heartbeat was answered.
        asked = markers_of(tmp_path, "cancel-asked")
        (beat,) = {asked[task] for task in cancelled}
        assert cancelled == dict.fromkeys(cancelled, beat)
        await asyncio.sleep(2 * HEARTBEAT)  # the worker keeps polling meanwhile
        assert len(markers_of(tmp_path, "started")) == 4  # nothing more was handed out
        assert not markers_of(tmp_path, "finished")

        got = (
            await http.get(f"/v1/jobs/{job['id']}", params={"should_return_stages": True})
        ).json()
        assert got["status"] == "ABORTED" and got["stages"][0]["status"] == "ABORTED"
        tasks = (await http.get(f"/v1/stages/{got['stages'][0]['id']}/tasks")).json()
        assert {t["status"] for t in tasks["items"]} == {"ABORTED"}
        log = await events(http, job["id"])
        aborts = [e for e in log if e["toStatus"] == "ABORTED"]
        assert count_by_source(aborts) == {
            ("JOB", "IN_PROGRESS"): 1,
            ("STAGE", "IN_PROGRESS"): 1,
            ("TASK", "IN_PROGRESS"): 4,
            ("TASK", "PENDING"): 2,
        }
        last_abort = max(e["id"] for e in aborts)
        assert not [e for e in log if e["id"] > last_abort]


def count_by_source(items: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for e in items:
        key = (e["entity"], e["fromStatus"])
        counts[key] = counts.get(key, 0) + 1
    return counts


async def test_pause_lets_running_tasks_finish_and_resume_completes_the_job(
    profile: Deployment, tmp_path: Path
) -> None:
    first, second = unique("p1"), unique("p2")
    async with scene(profile) as (stack, http):
        body = {
            "name": unique("pause"),
            "data": {},
            "stages": [
                {"type": first, "data": {}, "tasks": [{"data": {"seconds": 1.5}}] * 3},
                {"type": second, "data": {}, "tasks": [{"data": {"seconds": 0}}] * 2},
            ],
        }
        job = (await http.post("/v1/jobs", json=body)).json()
        stack.enter_context(
            marker_worker(profile, f"{first},{second}", tmp_path, "w", MARKER_CONCURRENCY="3")
        )
        await until_marked(tmp_path, "started", 3)
        paused = await http.put(f"/v1/jobs/{job['id']}/status", json={"status": "PAUSED"})
        assert paused.status_code == 200

        async def stage_one_done() -> bool:
            st = (await http.get(f"/v1/stages/{job['stages'][0]['id']}")).json()
            return st["status"] == "COMPLETED"

        await until(stage_one_done, "the running tasks to be recorded")
        await asyncio.sleep(1)  # the worker keeps polling; stage two must not start
        got = (
            await http.get(f"/v1/jobs/{job['id']}", params={"should_return_stages": True})
        ).json()
        assert got["status"] == "PAUSED"
        assert got["stages"][1]["summary"]["pending"] == 2
        assert len(markers_of(tmp_path, "finished")) == 3
        resumed = await http.put(f"/v1/jobs/{job['id']}/status", json={"status": "PENDING"})
        assert resumed.status_code == 200

        async def job_done() -> bool:
            return (await http.get(f"/v1/jobs/{job['id']}")).json()["status"] == "COMPLETED"

        await until(job_done, "the job to complete")
        assert len(markers_of(tmp_path, "finished")) == 5
