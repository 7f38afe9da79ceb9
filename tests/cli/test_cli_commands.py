"""The `jobnik` command line against a manager process: every command's output and exit
code, `events --follow` seeing a change as it happens, and tokens with auth on."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from jobnik_sdk.cli import app

from ..support.processes import free_port, manager_process
from ..support.profiles import production

pytestmark = pytest.mark.e2e  # a manager process, and the `jobnik` script as one


# The admin token of the deployment the module's tests run against (an operator at the
# command line who also creates and runs jobs): the CLI's JOBNIK_TOKEN, and the
# header of the tests' own calls.
_admin: dict[str, str] = {}


def admin() -> dict[str, str]:
    return {"authorization": f"Bearer {_admin['token']}"}


@pytest.fixture(scope="module")
def base_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The production profile: two replicas behind one URL, PostgreSQL, auth on."""
    with production(request, tmp_path_factory.mktemp("cli")) as profile:
        token = profile.token("admin")
        assert token
        _admin["token"] = token
        yield profile.url


def jobnik(base_url: str, *args: str, **env: str) -> Result:
    # Wide enough for whole ids in the tables; the admin's token unless the test gives one.
    runner = CliRunner(env={"COLUMNS": "250", "JOBNIK_TOKEN": _admin.get("token"), **env})
    return runner.invoke(app, [*args, "--url", base_url])


def new_job(
    base_url: str, tasks: int = 1, *, waiting: bool = False, name: str = "cli-job"
) -> dict[str, Any]:
    """A job of one stage of a type of its own, so that dequeues claim its tasks only."""
    stage_type = f"t{uuid.uuid4().hex[:10]}"
    body = {
        "name": name,
        "data": {},
        "stages": [
            {
                "type": stage_type,
                "data": {},
                "startAsWaiting": waiting,
                "tasks": [{"data": {"n": i}} for i in range(tasks)],
            }
        ],
    }
    created = httpx.post(f"{base_url}/v1/jobs", json=body, headers=admin())
    assert created.status_code == 201, created.text
    return dict(created.json())


def run_task(base_url: str, stage_type: str, status: str) -> None:
    claimed = httpx.patch(f"{base_url}/v1/stages/{stage_type}/tasks/dequeue", headers=admin())
    assert claimed.status_code == 200, claimed.text
    settled = httpx.put(
        f"{base_url}/v1/tasks/{claimed.json()['id']}/status",
        json={"status": status},
        headers=admin(),
    )
    assert settled.status_code == 200, settled.text


def test_create_from_json_and_yaml_then_list_and_show(base_url: str, tmp_path: Path) -> None:
    name = f"made-{uuid.uuid4().hex[:6]}"
    body = {
        "name": name,
        "data": {"area": "north"},
        "priority": "HIGH",
        "stages": [
            {
                "type": "cli-tile",
                "data": {},
                "tasks": [{"data": {"tile": 1}}, {"data": {"tile": 2}}],
            }
        ],
    }
    as_json = tmp_path / "job.json"
    as_json.write_text(json.dumps(body))
    made = jobnik(base_url, "create", str(as_json))
    assert made.exit_code == 0, made.stderr
    first = made.stdout.strip()
    assert uuid.UUID(first)

    as_yaml = tmp_path / "job.yaml"
    as_yaml.write_text(
        f"name: {name}\ndata: {{}}\nstages:\n  - type: cli-publish\n    data: {{}}\n"
    )
    made = jobnik(base_url, "create", str(as_yaml), "--json")
    assert made.exit_code == 0, made.stderr
    second = json.loads(made.stdout)
    assert second["name"] == name and second["stages"][0]["type"] == "cli-publish"

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    refused = jobnik(base_url, "create", str(broken))
    assert refused.exit_code == 2 and "not JSON" in refused.stderr
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"data": {}}))  # no name: the manager refuses it
    refused = jobnik(base_url, "create", str(invalid))
    assert refused.exit_code == 4 and "VALIDATION_ERROR" in refused.stderr

    listed = jobnik(base_url, "jobs", "list", "--name", name, "--json")
    assert listed.exit_code == 0, listed.stderr
    jobs = json.loads(listed.stdout)
    assert [j["id"] for j in jobs] == [second["id"], first]  # newest first

    table = jobnik(base_url, "jobs", "list", "--name", name, "--priority", "HIGH")
    assert table.exit_code == 0, table.stderr
    assert first in table.stdout and second["id"] not in table.stdout
    assert "HIGH" in table.stdout and "PENDING" in table.stdout

    pending = jobnik(base_url, "jobs", "list", "--status", "COMPLETED", "--status", "FAILED")
    assert pending.exit_code == 0 and first not in pending.stdout
    window = jobnik(base_url, "jobs", "list", "--name", name, "--from", "2000-01-01", "--json")
    assert len(json.loads(window.stdout)) == 2
    window = jobnik(base_url, "jobs", "list", "--name", name, "--to", "2000-01-01", "--json")
    assert json.loads(window.stdout) == []
    bad = jobnik(base_url, "jobs", "list", "--from", "yesterday")
    assert bad.exit_code == 2

    shown = jobnik(base_url, "jobs", "show", first)
    assert shown.exit_code == 0, shown.stderr
    for text in (first, name, "HIGH", "cli-tile", "0/2 done", "PENDING"):
        assert text in shown.stdout
    as_data = json.loads(jobnik(base_url, "jobs", "show", first, "--json").stdout)
    assert as_data["id"] == first and len(as_data["stages"]) == 1


def test_list_shows_the_newest_jobs_across_pages(base_url: str) -> None:
    name = f"many-{uuid.uuid4().hex[:6]}"
    ids = [new_job(base_url, 0, name=name)["id"] for _ in range(5)]
    listed = jobnik(base_url, "jobs", "list", "--name", name, "--limit", "3", "--json")
    assert [j["id"] for j in json.loads(listed.stdout)] == ids[::-1][:3]
    listed = jobnik(base_url, "jobs", "list", "--name", name, "--limit", "2", "--json")
    assert [j["id"] for j in json.loads(listed.stdout)] == ids[::-1][:2]


def test_steering_commands_and_their_refusals(base_url: str) -> None:
    job = new_job(base_url, 1, waiting=True)
    stage = job["stages"][0]
    job_id = job["id"]

    assert jobnik(base_url, "pause", job_id).exit_code == 0
    assert httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).json()["status"] == "PAUSED"
    resumed = jobnik(base_url, "resume", job_id)
    assert resumed.exit_code == 0 and "resumed" in resumed.stdout
    assert httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).json()["status"] != "PAUSED"

    changed = jobnik(base_url, "priority", job_id, "VERY_HIGH")
    assert changed.exit_code == 0 and "VERY_HIGH" in changed.stdout
    assert (
        httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).json()["priority"] == "VERY_HIGH"
    )
    assert jobnik(base_url, "priority", job_id, "URGENT").exit_code == 2

    approved = jobnik(base_url, "approve", stage["id"])
    assert approved.exit_code == 0, approved.stderr
    assert (
        httpx.get(f"{base_url}/v1/stages/{stage['id']}", headers=admin()).json()["status"]
        == "PENDING"
    )

    aborted = jobnik(base_url, "abort", job_id)
    assert aborted.exit_code == 0
    assert httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).json()["status"] == "ABORTED"
    again = jobnik(base_url, "approve", stage["id"])  # ABORTED, not WAITING
    assert again.exit_code == 4, again.stderr
    assert "refused (4" in again.stderr and "ILLEGAL" in again.stderr
    assert again.stdout == ""
    assert jobnik(base_url, "pause", job_id).exit_code == 4  # a final job


def test_tasks_list(base_url: str) -> None:
    job = new_job(base_url, 3)
    stage = job["stages"][0]
    run_task(base_url, stage["type"], "COMPLETED")
    listed = jobnik(base_url, "tasks", "list", "--stage", stage["id"])
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.count("PENDING") == 2 and listed.stdout.count("COMPLETED") == 1
    done = jobnik(base_url, "tasks", "list", "--stage", stage["id"], "--status", "COMPLETED")
    assert done.stdout.count("COMPLETED") == 1 and "PENDING" not in done.stdout
    as_data = json.loads(jobnik(base_url, "tasks", "list", "--stage", stage["id"], "--json").stdout)
    assert sorted(t["status"] for t in as_data) == ["COMPLETED", "PENDING", "PENDING"]


def test_wait_exits_by_how_the_job_ended(base_url: str) -> None:
    completed = new_job(base_url, 1)
    run_task(base_url, completed["stages"][0]["type"], "COMPLETED")
    done = jobnik(base_url, "wait", completed["id"], "--interval", "0.1")
    assert done.exit_code == 0, done.stderr
    assert done.stdout == f"{completed['id']} COMPLETED\n"

    failed = new_job(base_url, 1)
    run_task(base_url, failed["stages"][0]["type"], "FAILED")
    done = jobnik(base_url, "wait", failed["id"], "--json")
    assert done.exit_code == 1
    assert json.loads(done.stdout)["status"] == "FAILED"

    aborted = new_job(base_url, 1)
    httpx.put(
        f"{base_url}/v1/jobs/{aborted['id']}/status", json={"status": "ABORTED"}, headers=admin()
    )
    assert jobnik(base_url, "wait", aborted["id"]).exit_code == 1

    running = new_job(base_url, 1)
    started = time.monotonic()
    late = jobnik(base_url, "wait", running["id"], "--timeout", "0.5", "--interval", "0.1")
    assert late.exit_code == 6 and "timed out" in late.stderr
    assert time.monotonic() - started < 5


def test_not_found_unreachable_and_usage(base_url: str) -> None:
    unknown = str(uuid.uuid4())
    for args in (
        ("jobs", "show", unknown),
        ("pause", unknown),
        ("wait", unknown),
        ("events", unknown),
        ("approve", unknown),
        ("tasks", "list", "--stage", unknown),
    ):
        result = jobnik(base_url, *args)
        assert result.exit_code == 3, (args, result.stderr)
        assert "not found" in result.stderr and result.stdout == ""
    down = jobnik(f"http://127.0.0.1:{free_port()}", "jobs", "list")
    assert down.exit_code == 5 and "cannot reach" in down.stderr
    assert jobnik(base_url, "jobs", "frobnicate").exit_code == 2
    assert jobnik(base_url, "pause").exit_code == 2  # JOB missing


def test_events_history(base_url: str) -> None:
    job = new_job(base_url, 1)
    run_task(base_url, job["stages"][0]["type"], "COMPLETED")
    history = jobnik(base_url, "events", job["id"])
    assert history.exit_code == 0, history.stderr
    lines = history.stdout.splitlines()
    assert any("JOB" in line and "-> COMPLETED" in line for line in lines)
    assert any("TASK" in line and "IN_PROGRESS -> COMPLETED" in line for line in lines)
    as_data = json.loads(jobnik(base_url, "events", job["id"], "--json").stdout)
    assert len(as_data) == len(lines) and as_data[-1]["jobId"] == job["id"]
    followed = jobnik(base_url, "events", job["id"], "--follow")  # final: prints, ends
    assert followed.exit_code == 0 and followed.stdout == history.stdout
    latest = jobnik(base_url, "events", job["id"], "--last", "2")
    assert latest.exit_code == 0 and latest.stdout.splitlines() == lines[-2:]
    followed = jobnik(base_url, "events", job["id"], "--last", "3", "--follow")
    assert followed.exit_code == 0 and followed.stdout.splitlines() == lines[-3:]


def test_the_jobnik_script_follows_events_as_they_happen(base_url: str) -> None:
    script = shutil.which("jobnik", path=str(Path(sys.executable).parent))
    assert script is not None, "the jobnik console script is not installed"
    job = new_job(base_url, 1)
    proc = subprocess.Popen(
        [script, "events", job["id"], "--follow", "--interval", "0.1", "--url", base_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JOBNIK_TOKEN": _admin["token"]},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()

    def next_line_with(text: str) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} within 10 s")

    try:
        next_line_with("JOB")  # the history so far
        httpx.put(
            f"{base_url}/v1/jobs/{job['id']}/status", json={"status": "PAUSED"}, headers=admin()
        )
        assert job["id"] in next_line_with("-> PAUSED")
        assert proc.poll() is None  # the job is not final: it keeps following
        httpx.put(
            f"{base_url}/v1/jobs/{job['id']}/status", json={"status": "ABORTED"}, headers=admin()
        )
        next_line_with("-> ABORTED")
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_tokens_with_auth_on(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'auth.db'}"
    manager_cli = [sys.executable, "-m", "jobnik_manager.cli"]
    env = {**os.environ, "JOBNIK_DATABASE_URL": database}
    subprocess.run([*manager_cli, "migrate"], env=env, check=True, capture_output=True)
    made = subprocess.run(
        [*manager_cli, "tokens", "create", "--name", "ops", "--role", "operator"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    token = made.stdout.strip()
    with manager_process(database, JOBNIK_AUTH="on") as url:
        none = jobnik(url, "jobs", "list")
        assert none.exit_code == 4 and "UNAUTHORIZED" in none.stderr
        given = jobnik(url, "jobs", "list", "--token", token, "--json")
        assert given.exit_code == 0, given.stderr
        assert json.loads(given.stdout) == []
        from_env = jobnik(url, "jobs", "list", "--json", JOBNIK_TOKEN=token)
        assert from_env.exit_code == 0, from_env.stderr
        wrong = jobnik(url, "jobs", "list", "--token", token + "x")
        assert wrong.exit_code == 4 and "UNAUTHORIZED" in wrong.stderr
        assert token not in wrong.stderr


def test_the_sdk_imports_without_the_cli_extra() -> None:
    blocked = "import sys; sys.modules['typer'] = sys.modules['rich'] = None; import jobnik_sdk"
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_url_and_token_before_the_command_or_after_it(base_url: str) -> None:
    job_id = new_job(base_url, name="placed")["id"]
    token = _admin["token"]
    runner = CliRunner(env={"COLUMNS": "250", "JOBNIK_TOKEN": "", "JOBNIK_URL": ""})

    before = runner.invoke(app, ["--url", base_url, "--token", token, "jobs", "show", job_id])
    assert before.exit_code == 0, before.stderr
    assert job_id in before.stdout
    # From the environment, as JOBNIK_URL and JOBNIK_TOKEN.
    env = runner.invoke(
        app, ["jobs", "show", job_id], env={"JOBNIK_URL": base_url, "JOBNIK_TOKEN": token}
    )
    assert env.exit_code == 0, env.stderr
    # After the command, they win over those before it and over the environment.
    down = f"http://127.0.0.1:{free_port()}"
    after = runner.invoke(
        app,
        ["--url", down, "--token", "wrong", "jobs", "show", job_id, "--url", base_url],
        env={"JOBNIK_TOKEN": "also-wrong"},
    )
    assert after.exit_code == 4 and "401" in after.stderr  # the token before it was used
    after = runner.invoke(
        app, ["--url", down, "jobs", "show", job_id, "--url", base_url, "--token", token]
    )
    assert after.exit_code == 0, after.stderr


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("jobnik ")


def test_a_job_named_by_the_first_digits_of_its_id(base_url: str) -> None:
    job_id = new_job(base_url, name="short-id")["id"]
    shown = jobnik(base_url, "jobs", "show", job_id[:8])  # as the dashboard shows it
    assert shown.exit_code == 0, shown.stderr
    assert job_id in shown.stdout
    paused = jobnik(base_url, "pause", job_id[:8].upper())
    assert paused.exit_code == 0, paused.stderr
    assert f"job {job_id} paused" in paused.stdout
    not_hex = jobnik(base_url, "jobs", "show", "not-an-id")
    assert not_hex.exit_code == 2 and "not a job id" in not_hex.stderr
    # 31 digits no job's id starts: ours, but for its last.
    digits = job_id.replace("-", "")[:31]
    other = digits[:30] + ("0" if digits[30] != "0" else "1")
    missing = jobnik(base_url, "events", other)
    assert missing.exit_code == 3 and "no job's id starts with" in missing.stderr


def test_a_narrow_terminal_keeps_every_column_and_a_pipe_gets_them_whole(base_url: str) -> None:
    job_id = new_job(base_url, name="a-rather-long-job-name-to-fold")["id"]
    for columns in ("80", "100"):
        narrow = jobnik(base_url, "jobs", "list", "--name", "a-rather-long-job-name-to-fold",
                        COLUMNS=columns)  # fmt: skip
        assert narrow.exit_code == 0, narrow.stderr
        text = narrow.stdout
        assert job_id[:8] in text and job_id not in text  # the id as the CLI takes it
        for header in ("name", "status", "priority", "progress", "created"):
            assert header in text, (columns, text)
        assert "a-rather" in text and "MEDIUM" in text
    # Into a pipe, with no COLUMNS: as wide as it needs, the whole id.
    runner = CliRunner(env={"JOBNIK_TOKEN": _admin["token"], "COLUMNS": None})
    piped = runner.invoke(app, ["jobs", "list", "--name", "a-rather-long-job-name-to-fold",
                                "--url", base_url])  # fmt: skip
    assert piped.exit_code == 0, piped.stderr
    assert job_id in piped.stdout and "a-rather-long-job-name-to-fold" in piped.stdout


def test_steering_twice_then_cancel_retry_and_delete(base_url: str) -> None:
    job = new_job(base_url, 2)
    job_id, stage = job["id"], job["stages"][0]

    def status() -> str:
        return str(httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).json()["status"])

    assert jobnik(base_url, "pause", job_id).stdout.strip() == f"job {job_id} paused"
    twice = jobnik(base_url, "pause", job_id)
    assert twice.exit_code == 0, twice.stderr
    assert twice.stdout.strip() == f"job {job_id} already paused (unchanged)"
    assert jobnik(base_url, "resume", job_id).exit_code == 0
    again = jobnik(base_url, "resume", job_id)
    assert again.exit_code == 0 and "already resumed (unchanged)" in again.stdout

    first, second = stage["tasks"]
    cancelled = jobnik(base_url, "tasks", "cancel", first["id"], "--reason", "not needed")
    assert cancelled.exit_code == 0 and f"task {first['id']} cancelled" in cancelled.stdout
    task = httpx.get(f"{base_url}/v1/tasks/{first['id']}", headers=admin()).json()
    assert (task["status"], task["reason"]) == ("ABORTED", "not needed")
    run_task(base_url, stage["type"], "FAILED")  # its only attempt: the job fails
    assert status() == "FAILED"

    retried = jobnik(base_url, "retry", job_id[:8])
    assert retried.exit_code == 0, retried.stderr
    assert retried.stdout.strip() == f"job {job_id} retried: IN_PROGRESS"
    for _ in range(2):  # the failed task and the cancelled one, both offered again
        run_task(base_url, stage["type"], "COMPLETED")
    assert status() == "COMPLETED"
    assert (
        httpx.get(f"{base_url}/v1/tasks/{second['id']}", headers=admin()).json()["status"]
        == "COMPLETED"
    )

    unasked = jobnik(base_url, "delete", job_id)  # not a terminal: --yes is needed
    assert unasked.exit_code == 2 and "--yes" in unasked.stderr
    deleted = jobnik(base_url, "delete", job_id, "--yes")
    assert deleted.exit_code == 0 and f"job {job_id} deleted" in deleted.stdout
    assert httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).status_code == 404


def test_stage_types_shows_the_queues(base_url: str) -> None:
    job = new_job(base_url, 3)
    kind = job["stages"][0]["type"]
    claimed = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
    assert claimed.status_code == 200, claimed.text
    shown = jobnik(base_url, "stage-types")
    assert shown.exit_code == 0, shown.stderr
    [row] = [line for line in shown.stdout.splitlines() if kind in line]
    cells = [cell.strip() for cell in row.split("│")]
    assert cells[:5] == [kind, "2", "1", "0", "0"], row  # waiting, in flight, expiring, failed
    assert cells[5].endswith(" s"), row  # how long the oldest has waited
    as_data = json.loads(jobnik(base_url, "stage-types", "--json").stdout)
    [mine] = [load for load in as_data if load["type"] == kind]
    assert (mine["waiting"], mine["inFlight"]) == (2, 1)


def test_workers_lists_who_claims_at_80_columns(base_url: str) -> None:
    job = new_job(base_url, 2)
    kind = job["stages"][0]["type"]
    name = f"{kind}-renderer"
    claimed = httpx.patch(
        f"{base_url}/v1/stages/{kind}/tasks/dequeue", params={"worker": name}, headers=admin()
    )
    assert claimed.status_code == 200, claimed.text
    shown = jobnik(base_url, "workers", COLUMNS="80")
    assert shown.exit_code == 0, shown.stderr
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())
    # One row, its cells folded over lines: each column's pieces, joined, are whole.
    body = shown.stdout.split("╇")[-1].splitlines()[1:]
    pieces = [[cell.strip() for cell in line.split("│")] for line in body if "│" in line]
    columns = ["".join(column) for column in zip(*pieces, strict=True)]
    assert columns[0] == name and columns[1] == kind, shown.stdout
    assert (columns[2], columns[5]) == ("1", "admin"), shown.stdout
    as_data = json.loads(jobnik(base_url, "workers", "--json").stdout)
    [mine] = [w for w in as_data if w["name"] == name]
    assert (mine["stageTypes"], mine["inFlight"]) == ([kind], 1)


def test_stage_types_pause_and_resume(base_url: str) -> None:
    job = new_job(base_url, 2)
    kind = job["stages"][0]["type"]
    paused = jobnik(base_url, "stage-types", "pause", kind)
    assert paused.exit_code == 0 and paused.stdout.strip() == f"stage type {kind} paused"
    refused = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
    assert refused.status_code == 404, refused.text  # nothing handed out
    [row] = [line for line in jobnik(base_url, "stage-types").stdout.splitlines() if kind in line]
    assert row.rstrip().endswith("PAUSED │ -"), row  # paused, no limits
    resumed = jobnik(base_url, "stage-types", "resume", kind)
    assert resumed.exit_code == 0 and resumed.stdout.strip() == f"stage type {kind} resumed"
    claimed = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
    assert claimed.status_code == 200, claimed.text


def test_stage_types_limit_and_unlimit(base_url: str) -> None:
    job = new_job(base_url, 3)
    kind = job["stages"][0]["type"]
    limited = jobnik(base_url, "stage-types", "limit", kind, "--in-flight", "1", "--rate", "50")
    assert limited.exit_code == 0, limited.stderr
    assert limited.stdout.strip() == f"stage type {kind} limited to 1 in flight, 50/s (burst 50)"
    first = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
    assert first.status_code == 200, first.text
    held = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
    assert held.status_code == 404, held.text  # one in flight at most
    [row] = [line for line in jobnik(base_url, "stage-types").stdout.splitlines() if kind in line]
    assert row.rstrip().endswith("1 in flight, 50/s (burst 50)"), row
    unlimited = jobnik(base_url, "stage-types", "unlimit", kind)
    assert unlimited.stdout.strip() == f"stage type {kind} unlimited"
    again = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
    assert again.status_code == 200, again.text
    bad = jobnik(base_url, "stage-types", "limit", kind)
    assert bad.exit_code == 4 and "maxInFlight" in bad.stderr, bad.stderr


def test_stage_types_flow_counts_this_minutes_moves_at_80_columns(base_url: str) -> None:
    job = new_job(base_url, 3)
    kind = job["stages"][0]["type"]
    for status in ("COMPLETED", "FAILED"):
        claimed = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin())
        assert claimed.status_code == 200, claimed.text
        task = claimed.json()["id"]
        reported = httpx.put(
            f"{base_url}/v1/tasks/{task}/status", json={"status": status}, headers=admin()
        )
        assert reported.status_code == 200, reported.text
    shown = jobnik(base_url, "stage-types", "flow", kind, "--minutes", "5", COLUMNS="80")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.startswith(f"stage type {kind} since ")
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())
    [total] = [line for line in shown.stdout.splitlines() if line.strip().startswith("total")]
    # Made and moved within a second: one minute (or two, across a minute's turn).
    assert [cell.strip() for cell in total.split("│")] == ["total", "3", "1", "1", "0"], total
    as_data = json.loads(jobnik(base_url, "stage-types", "flow", kind, "--json").stdout)
    assert len(as_data["minutes"]) == 61
    assert sum(m["created"] for m in as_data["minutes"]) == 3
    refused = jobnik(base_url, "stage-types", "flow", kind, "--minutes", "0")
    assert refused.exit_code == 2 and "--minutes" in refused.stderr


def test_jobs_list_searches_part_of_a_name(base_url: str) -> None:
    word = uuid.uuid4().hex[:10]
    for name in (f"roads-{word}", f"RIVERS-{word.upper()}", "other"):
        made = httpx.post(f"{base_url}/v1/jobs", json={"name": name, "data": {}}, headers=admin())
        assert made.status_code == 201, made.text
    listed = json.loads(jobnik(base_url, "jobs", "list", "--search", word, "--json").stdout)
    assert sorted(j["name"] for j in listed) == [f"RIVERS-{word.upper()}", f"roads-{word}"]


def test_show_prints_a_jobs_deadline_and_expiry(base_url: str) -> None:
    times = {"deadline": "2099-01-02T03:04:05Z", "expiresAt": "2099-01-01T00:00:00Z"}
    body = {"name": "timed", "data": {}, **times}
    job = httpx.post(f"{base_url}/v1/jobs", json=body, headers=admin()).json()
    shown = jobnik(base_url, "jobs", "show", job["id"]).stdout
    assert "deadline  2099-01-02 03:04:05" in shown, shown
    assert "expires   2099-01-01 00:00:00" in shown, shown


def test_show_prints_what_the_job_produced(base_url: str) -> None:
    job = new_job(base_url, 1)
    kind = job["stages"][0]["type"]
    claimed = httpx.patch(f"{base_url}/v1/stages/{kind}/tasks/dequeue", headers=admin()).json()
    lease = {"leaseId": claimed["leaseId"]}
    assets = [
        {"type": "tile-pyramid", "uri": "s3://tiles/run/", "sizeBytes": 2048, "name": "z0-9"},
        {"type": "report", "uri": "/exports/summary.pdf"},
    ]
    task_url = f"{base_url}/v1/tasks/{claimed['id']}"
    added = httpx.post(f"{task_url}/assets", json={**lease, "assets": assets}, headers=admin())
    assert added.status_code == 201, added.text
    result = {"tiles": 341, "bbox": [34.2, 31.1, 35.9, 33.3]}
    set_ = httpx.put(f"{task_url}/job-result", json={**lease, "result": result}, headers=admin())
    assert set_.status_code == 200, set_.text
    shown = jobnik(base_url, "jobs", "show", job["id"], COLUMNS="120")
    assert shown.exit_code == 0, shown.stderr
    [row] = [line for line in shown.stdout.splitlines() if line.startswith("result")]
    assert json.loads(row.removeprefix("result").strip()) == result
    assert "assets (2)" in shown.stdout
    [tiles] = [line for line in shown.stdout.splitlines() if "tile-pyramid" in line]
    assert [cell.strip() for cell in tiles.split("│")][:4] == [
        "tile-pyramid",
        "z0-9",
        "s3://tiles/run/",
        "2,048 B",
    ]
    as_data = json.loads(jobnik(base_url, "jobs", "show", job["id"], "--json").stdout)
    assert as_data["result"] == result


def test_dead_letters_listed_discarded_and_retried(base_url: str) -> None:
    jobs = [new_job(base_url, 1) for _ in range(2)]
    kind = jobs[0]["stages"][0]["type"]
    tasks = []
    for job in jobs:
        stage_type = job["stages"][0]["type"]
        claimed = httpx.patch(f"{base_url}/v1/stages/{stage_type}/tasks/dequeue", headers=admin())
        body = {"status": "FAILED", "leaseId": claimed.json()["leaseId"], "reason": "disk full"}
        failed = httpx.put(
            f"{base_url}/v1/tasks/{claimed.json()['id']}/status", json=body, headers=admin()
        )
        assert failed.status_code == 200, failed.text
        tasks.append(claimed.json()["id"])
    shown = jobnik(base_url, "dead-letters", "--type", kind, COLUMNS="160")
    assert shown.exit_code == 0, shown.stderr
    assert "1 dead letters" in shown.stdout and tasks[0] in shown.stdout
    assert "disk full" in shown.stdout
    as_data = json.loads(jobnik(base_url, "dead-letters", "--json").stdout)
    assert {tasks[0], tasks[1]} <= {item["task"]["id"] for item in as_data["items"]}
    discarded = jobnik(base_url, "dead-letters", "discard", tasks[0])
    assert discarded.exit_code == 0, discarded.stderr
    assert "discarded 1 dead letters" in discarded.stdout
    retried = jobnik(base_url, "dead-letters", "retry", tasks[0], tasks[1])
    assert retried.exit_code == 0, retried.stderr
    assert "retried 1 dead letters" in retried.stdout
    assert f"skipped {tasks[0]}" in retried.stdout
    job = httpx.get(f"{base_url}/v1/jobs/{jobs[1]['id']}", headers=admin()).json()
    assert job["status"] == "IN_PROGRESS"
    neither = jobnik(base_url, "dead-letters", "retry")
    assert neither.exit_code != 0 and "one of them" in neither.stderr


def test_schedules_put_listed_shown_run_paused_and_deleted(base_url: str, tmp_path: Path) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"name": "from-a-schedule", "data": {"k": 1}}))
    put = jobnik(base_url, "schedules", "put", name, str(job), "--cron", "*/2 * * * * *")
    assert put.exit_code == 0, put.stderr
    assert put.stdout.startswith(f"{name}: */2 * * * * *, next ")
    listed = jobnik(base_url, "schedules")
    assert listed.exit_code == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if line.strip().startswith(name)]
    assert "*/2 * * * * *" in row
    time.sleep(3)  # a replica's tick makes its job within a second of each time
    shown = jobnik(base_url, "schedules", "show", name)
    assert shown.exit_code == 0, shown.stderr
    assert "jobs made" in shown.stdout and "0 jobs made" not in shown.stdout
    ran = jobnik(base_url, "schedules", "run", name)
    assert ran.exit_code == 0, ran.stderr
    job_id = ran.stdout.strip()
    made = httpx.get(f"{base_url}/v1/jobs/{job_id}", headers=admin()).json()
    assert (made["name"], made["data"]) == ("from-a-schedule", {"k": 1})
    assert jobnik(base_url, "schedules", "pause", name).stdout.strip() == f"paused {name}"
    as_data = json.loads(jobnik(base_url, "schedules", "show", name, "--json").stdout)
    assert as_data["paused"] is True and any(r["manual"] for r in as_data["runs"])
    assert jobnik(base_url, "schedules", "resume", name).exit_code == 0
    assert jobnik(base_url, "schedules", "delete", name).stdout.strip() == f"deleted {name}"
    gone = jobnik(base_url, "schedules", "show", name)
    assert gone.exit_code == 3, gone.stdout  # not found
    bad = jobnik(base_url, "schedules", "put", name, str(job), "--cron", "61 * * * *")
    assert bad.exit_code == 4 and "not a cron expression" in bad.stderr, bad.stderr
