"""The soak's workload: scenarios a team's pipelines go through, each a job made and
steered by the actor whose role it is (the producer creates, pauses, resumes, cancels,
aborts and re-prioritises; the operator approves and replays), and the final status
each must end in whatever faults happen meanwhile.

Stage types: `ingest`, `render` and `publish`, each served by template workers running
support.scenario_handler, whose task data says what a task does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
from uuid6 import uuid7

from jobnik_sdk import (
    ApiError,
    JobnikClient,
    JobnikTransportError,
    JobStatus,
    NewJob,
    NewStage,
    NewTask,
    NotFoundError,
    Priority,
    StageStatus,
)

log = logging.getLogger("soak")
T = TypeVar("T")

INGEST, RENDER, PUBLISH = "ingest", "render", "publish"
STAGE_TYPES = (INGEST, RENDER, PUBLISH)
# Crashes, lease expiries and restarts spend attempts that the scenario did not plan.
SPARE = 20


def ok(seconds: float = 0.05) -> NewTask:
    return NewTask(data={"do": "ok", "seconds": seconds}, max_attempts=SPARE)


def tasks(n: int, seconds: float = 0.05) -> list[NewTask]:
    return [ok(seconds) for _ in range(n)]


@dataclass
class Actors:
    producer: JobnikClient
    operator: JobnikClient
    # The producer's token over plain HTTP: for the Open Job Spec's binding.
    producer_http: httpx.AsyncClient


async def persist(what: str, call: Callable[[], Awaitable[T]], *, within: float = 240) -> T:
    """`call`, asked again while the manager is unreachable or answers 5xx (a fault is
    under way): a client's own retries give up sooner than a fault lasts."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await call()
        except httpx.TransportError as exc:  # plain HTTP's (the OJS scenario's)
            if time.monotonic() > deadline:
                raise
            log.info("%s: %r; asking again", what, exc)
            await asyncio.sleep(1)
        except (JobnikTransportError, ApiError) as exc:
            status = getattr(exc, "status_code", None)
            if isinstance(exc, ApiError) and (status is None or status < 500):
                raise
            if time.monotonic() > deadline:
                raise
            log.info("%s: %r; asking again", what, exc)
            await asyncio.sleep(1)


async def until(what: str, check: Callable[[], Awaitable[bool]], *, within: float = 240) -> None:
    deadline = time.monotonic() + within
    while not await persist(what, check):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {within} s")
        await asyncio.sleep(0.5)


@dataclass
class Scenario:
    name: str
    expect: JobStatus
    # Makes the job and steers it; answers its id once made (steering goes on after).
    run: Callable[[Actors, Callable[[str], None]], Awaitable[None]]


# Every scenario, in the order they are defined: the soak cycles through them.
SCENARIOS: list[Scenario] = []

Steer = Callable[[Actors, Callable[[str], None]], Awaitable[None]]


def scenario(expect: JobStatus) -> Callable[[Steer], Steer]:
    """Register the function as a scenario named after it, whose job ends `expect`."""

    def register(run: Steer) -> Steer:
        SCENARIOS.append(Scenario(run.__name__, expect, run))
        return run

    return register


async def _create(actors: Actors, name: str, stages: list[NewStage], **options: Any) -> str:
    key = f"soak-{name}-{time.monotonic_ns()}"
    job = await persist(
        f"create {name}",
        lambda: actors.producer.create_job(name, stages=stages, idempotency_key=key, **options),
    )
    return str(job.id)


async def _stage_id(actors: Actors, job_id: str, order: int) -> str:
    stages = await persist("stages", lambda: actors.operator.get_job_stages(job_id))
    return str(next(s.id for s in stages if s.order == order))


@scenario(JobStatus.COMPLETED)
async def plain(actors: Actors, made: Callable[[str], None]) -> None:
    stages = [
        NewStage(type=INGEST, tasks=tasks(4)),
        NewStage(type=RENDER, tasks=tasks(6)),
        NewStage(type=PUBLISH, tasks=tasks(2)),
    ]
    made(await _create(actors, "plain", stages))


@scenario(JobStatus.COMPLETED)
async def approval(actors: Actors, made: Callable[[str], None]) -> None:
    stages = [
        NewStage(type=INGEST, tasks=tasks(2)),
        NewStage(type=RENDER, tasks=tasks(3), start_as_waiting=True),
    ]
    job_id = await _create(actors, "approval", stages)
    made(job_id)
    first, second = await _stage_id(actors, job_id, 1), await _stage_id(actors, job_id, 2)

    async def its_turn() -> bool:
        # A stage made WAITING waits from the start; its turn comes when the one before
        # it has completed.
        stage = await actors.operator.get_stage(first)
        return stage.status is StageStatus.COMPLETED

    await until("stage 1 completed", its_turn)
    await persist("approve", lambda: actors.operator.approve_stage(second))


@scenario(JobStatus.COMPLETED)
async def fanout(actors: Actors, made: Callable[[str], None]) -> None:
    # Each ingest task adds 5 tasks to the render stage: 1 + 2 * 5 in the end.
    stages = [
        NewStage(
            type=INGEST, tasks=[NewTask(data={"do": "fanout", "n": 5}, max_attempts=SPARE)] * 2
        ),
        NewStage(type=RENDER, tasks=tasks(1)),
    ]
    made(await _create(actors, "fanout", stages))


@scenario(JobStatus.COMPLETED)
async def flaky(actors: Actors, made: Callable[[str], None]) -> None:
    work = [NewTask(data={"do": "flaky"}, max_attempts=SPARE) for _ in range(6)]
    made(await _create(actors, "flaky", [NewStage(type=RENDER, tasks=work)]))


@scenario(JobStatus.FAILED)
async def exhausted(actors: Actors, made: Callable[[str], None]) -> None:
    doomed = NewTask(data={"do": "exhaust"}, max_attempts=2)
    stages = [
        NewStage(type=INGEST, tasks=tasks(1)),
        NewStage(type=RENDER, tasks=[*tasks(3), doomed]),
    ]
    made(await _create(actors, "exhausted", stages))


@scenario(JobStatus.FAILED)
async def doomed(actors: Actors, made: Callable[[str], None]) -> None:
    bad = NewTask(data={"do": "doomed"}, max_attempts=SPARE)
    made(await _create(actors, "doomed", [NewStage(type=PUBLISH, tasks=[*tasks(2), bad])]))


@scenario(JobStatus.COMPLETED)
async def later(actors: Actors, made: Callable[[str], None]) -> None:
    until_ = time.time() + 3
    work = [NewTask(data={"do": "later", "until": until_}, max_attempts=SPARE) for _ in range(3)]
    made(await _create(actors, "later", [NewStage(type=RENDER, tasks=work)]))


@scenario(JobStatus.COMPLETED)
async def overrun(actors: Actors, made: Callable[[str], None]) -> None:
    # Past its 2 s limit on the first attempt: failed "timed out", then run again.
    work = [
        NewTask(data={"do": "overrun", "first": 4}, max_attempts=SPARE, timeout_seconds=2)
        for _ in range(2)
    ]
    made(await _create(actors, "overrun", [NewStage(type=RENDER, tasks=work)]))


@scenario(JobStatus.COMPLETED)
async def cancelled_task(actors: Actors, made: Callable[[str], None]) -> None:
    job_id = await _create(actors, "cancel", [NewStage(type=PUBLISH, tasks=tasks(4, 1.0))])
    made(job_id)
    stage = await _stage_id(actors, job_id, 1)
    listed = await persist("tasks", lambda: actors.producer.get_stage(stage, with_tasks=True))
    victim = (listed.tasks or [])[-1]
    try:
        await persist("cancel", lambda: actors.producer.cancel_task(victim.id, reason="not needed"))
    except ApiError as exc:  # it finished first: the job completes all the same
        log.info("cancel came late: %s", exc)


@scenario(JobStatus.ABORTED)
async def aborted(actors: Actors, made: Callable[[str], None]) -> None:
    job_id = await _create(actors, "abort", [NewStage(type=INGEST, tasks=tasks(6, 2.0))])
    made(job_id)
    await asyncio.sleep(1)
    await persist("abort", lambda: actors.producer.abort(job_id))


@scenario(JobStatus.COMPLETED)
async def paused(actors: Actors, made: Callable[[str], None]) -> None:
    stages = [NewStage(type=INGEST, tasks=tasks(4)), NewStage(type=RENDER, tasks=tasks(4))]
    job_id = await _create(actors, "pause", stages)
    made(job_id)
    await persist("pause", lambda: actors.producer.pause(job_id))
    await asyncio.sleep(3)
    await persist("priority", lambda: actors.producer.set_priority(job_id, Priority.HIGH))
    await persist("resume", lambda: actors.producer.resume(job_id))


@scenario(JobStatus.COMPLETED)
async def scheduled(actors: Actors, made: Callable[[str], None]) -> None:
    start = datetime.now(UTC) + timedelta(seconds=4)
    stages = [NewStage(type=PUBLISH, tasks=tasks(3))]
    made(await _create(actors, "scheduled", stages, not_before=start))


@scenario(JobStatus.COMPLETED)
async def replayed(actors: Actors, made: Callable[[str], None]) -> None:
    work = [NewTask(data={"do": "replay"}, max_attempts=SPARE)]
    job_id = await _create(actors, "replay", [NewStage(type=PUBLISH, tasks=work)])
    made(job_id)

    async def settled() -> bool:
        return (await actors.operator.get_job(job_id)).status.is_final

    await until("replayable job final", settled)
    job = await persist("read", lambda: actors.operator.get_job(job_id))
    if job.status is JobStatus.FAILED:
        await persist("replay", lambda: actors.operator.retry_job(job_id))


@scenario(JobStatus.ABORTED)
async def expired(actors: Actors, made: Callable[[str], None]) -> None:
    # Waiting for an approval that never comes: nothing of it starts by its expiry.
    stages = [NewStage(type=INGEST, tasks=tasks(2), start_as_waiting=True)]
    expires = datetime.now(UTC) + timedelta(seconds=3)
    made(await _create(actors, "expired", stages, expires_at=expires))


@scenario(JobStatus.COMPLETED)
async def from_schedule(actors: Actors, made: Callable[[str], None]) -> None:
    # A schedule's first run makes the job; the schedule goes once it has.
    name = f"soak-{time.monotonic_ns()}"
    job = NewJob(name="from a schedule", stages=[NewStage(type=PUBLISH, tasks=tasks(2))])
    every = timedelta(seconds=5)
    await persist("schedule", lambda: actors.producer.put_schedule(name, job, interval=every))
    runs: list[Any] = []

    async def ran() -> bool:
        runs[:] = (await actors.producer.list_schedule_runs(name)).items
        return bool(runs)

    await until("the schedule's first run", ran)
    made(str(runs[-1].job_id))
    with contextlib.suppress(NotFoundError):  # a retried delete finds it gone
        await persist("unschedule", lambda: actors.producer.delete_schedule(name))


async def _ojs_post(actors: Actors, what: str, path: str, body: dict[str, Any]) -> None:
    """POST to the OJS binding, asked again through faults; a 409 is the answer of a
    first try whose answer a fault cut (every job in the body carries its own id)."""

    async def post() -> None:
        said = await actors.producer_http.post(path, json=body)
        if said.status_code >= 500:
            raise httpx.TransportError(f"{said.status_code}: {said.text[:200]}")
        if said.status_code not in (201, 409):
            raise RuntimeError(f"{what} refused: {said.status_code} {said.text[:300]}")

    await persist(what, post)


async def _job_of_task(actors: Actors, task_id: str) -> str:
    task = await persist("its task", lambda: actors.producer.get_task(task_id))
    stage = await persist("its stage", lambda: actors.producer.get_stage(str(task.stage_id)))
    return str(stage.job_id)


def _ojs_job(kind: str, queue: str) -> dict[str, Any]:
    """An OJS job with an id of its own and the soak's spare attempts."""
    options = {"queue": queue, "retry": {"max_attempts": SPARE}}
    return {"id": str(uuid7()), "type": kind, "args": [1], "options": options}


@scenario(JobStatus.COMPLETED)
async def ojs_chain(actors: Actors, made: Callable[[str], None]) -> None:
    # A chain over the OJS binding: one job whose stages are its steps, each run by the
    # template's SDK workers of its type in turn.
    steps = [_ojs_job("soak.render", RENDER), _ojs_job("soak.publish", PUBLISH)]
    await _ojs_post(actors, "OJS chain", "/ojs/v1/workflows", {"type": "chain", "steps": steps})
    made(await _job_of_task(actors, steps[0]["id"]))


@scenario(JobStatus.COMPLETED)
async def ojs_batch(actors: Actors, made: Callable[[str], None]) -> None:
    # A batch over the OJS binding, run by SDK workers reporting over v1: its callbacks
    # are fired by the maintenance tick, the on_success one's job is the one watched.
    jobs = [_ojs_job("soak.render", RENDER) for _ in range(2)]
    callbacks = {"on_complete": _ojs_job("soak.report", PUBLISH)}
    callbacks["on_success"] = _ojs_job("soak.celebrate", PUBLISH)
    body = {"type": "batch", "jobs": jobs, "callbacks": callbacks}
    await _ojs_post(actors, "OJS batch", "/ojs/v1/workflows", body)
    made(await _job_of_task(actors, callbacks["on_success"]["id"]))


@scenario(JobStatus.COMPLETED)
async def over_ojs(actors: Actors, made: Callable[[str], None]) -> None:
    # An Open Job Spec client pushes a job to the render queue; the template's SDK
    # workers run it as any render task (its data holds no "do": plain work).
    job = _ojs_job("soak.render", RENDER)
    await _ojs_post(actors, "OJS push", "/ojs/v1/jobs", job)
    made(await _job_of_task(actors, job["id"]))
