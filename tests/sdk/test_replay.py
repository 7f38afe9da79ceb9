"""Replaying a failed job (`POST /v1/jobs/{id}/retry`), over HTTP on the manager (SQLite
and PostgreSQL, in-process) and on the fake alike: the failed stage's FAILED and ABORTED
tasks get a fresh set of attempts, the stage and the job run again, the history says who
asked; a job that is not FAILED is refused; workers polling meanwhile get each task once."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from ..support.api import Api, unique

# `api`: the manager on each backend, or the fake, over HTTP (conftest.py).


async def _failed_job(api: Api, tasks: int = 3) -> tuple[dict[str, Any], str, str]:
    """A job whose first stage failed: one task failed for good, one was running (and
    still is), the rest were aborted with the stage. Answers the job, the stage type of
    the failed stage and the id of the running task."""
    kind, after = unique("replayed"), unique("after")
    job = await api.create_job(
        stages=[
            {"type": kind, "data": {}, "tasks": [{"data": {"n": n}} for n in range(tasks)]},
            {"type": after, "data": {}, "tasks": [{"data": {}}]},
        ]
    )
    failing, running = await api.dequeue(kind), await api.dequeue(kind)
    assert failing is not None and running is not None
    await api.call(
        "PUT", f"/v1/tasks/{failing['id']}/status", json={"status": "FAILED", "reason": "boom"}
    )
    failed = await api.job(job["id"])
    assert (failed["status"], failed["failedTaskId"]) == ("FAILED", failing["id"])
    return failed, kind, running["id"]


async def test_a_failed_job_runs_its_failed_stage_again(api: Api) -> None:
    job, kind, running_id = await _failed_job(api, tasks=4)
    replayed = await api.call("POST", f"/v1/jobs/{job['id']}/retry")
    assert replayed["status"] == "IN_PROGRESS"
    assert not {"reason", "failedTaskId", "failedStageId", "endTime"} & replayed.keys()
    stages = (await api.job(job["id"], should_return_stages="true"))["stages"]
    assert [st["status"] for st in stages] == ["IN_PROGRESS", "CREATED"]
    assert "reason" not in stages[0] and "endTime" not in stages[0]
    tasks = (
        await api.call("GET", f"/v1/stages/{stages[0]['id']}", params={"should_return_tasks": True})
    )["tasks"]
    statuses = Counter(t["status"] for t in tasks)
    assert statuses == {"PENDING": 3, "IN_PROGRESS": 1}
    for task in tasks:
        if task["status"] == "PENDING":
            assert task["attempts"] == 0 and "reason" not in task and "endTime" not in task
    assert stages[0]["summary"]["pending"] == 3 and stages[0]["summary"]["failed"] == 0

    events = await api.call("GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 1000})
    replay = [e for e in events["items"] if e.get("reason") == "retried by user"]
    assert {(e["entity"], e["fromStatus"], e["toStatus"]) for e in replay} == {
        ("JOB", "FAILED", "IN_PROGRESS"),
        ("TASK", "FAILED", "PENDING"),
        ("TASK", "ABORTED", "PENDING"),
    }

    await api.report(running_id, "COMPLETED")  # the running task was never stopped
    for _ in range(3):
        await api.run_one(kind)
    await api.run_one(stages[1]["type"])
    done = await api.job(job["id"])
    assert done["status"] == "COMPLETED" and "endTime" in done and "reason" not in done


async def test_only_a_failed_job_can_be_retried(api: Api) -> None:
    kind = unique("not-failed")
    job = await api.create_job(stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}])
    refused = await api.call("POST", f"/v1/jobs/{job['id']}/retry", 409)
    assert refused == {
        "code": "JOB_NOT_FAILED",
        "message": "Job is PENDING; only a FAILED job can be retried",
    }
    await api.run_one(kind)
    done = await api.call("POST", f"/v1/jobs/{job['id']}/retry", 409)
    assert done["message"] == "Job is COMPLETED; only a FAILED job can be retried"
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    missing = await api.call("POST", "/v1/jobs/00000000-0000-4000-8000-000000000000/retry", 404)
    assert missing["code"] == "JOB_NOT_FOUND"
    failed, _, _ = await _failed_job(api)
    await api.call("POST", f"/v1/jobs/{failed['id']}/retry")
    again = await api.call("POST", f"/v1/jobs/{failed['id']}/retry", 409)
    assert again["message"] == "Job is IN_PROGRESS; only a FAILED job can be retried"


async def test_a_replay_while_workers_poll_hands_each_task_out_once(api: Api) -> None:
    job, kind, running_id = await _failed_job(api, tasks=30)
    await api.report(running_id, "COMPLETED")
    handed: Counter[str] = Counter()
    stop = asyncio.Event()

    async def worker() -> None:
        while not stop.is_set():
            task = await api.dequeue(kind)
            if task is None:
                await asyncio.sleep(0.001)
                continue
            handed[task["id"]] += 1
            await api.report(task["id"], "COMPLETED")

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    await asyncio.sleep(0.01)
    await api.call("POST", f"/v1/jobs/{job['id']}/retry")
    stage_id = job["failedStageId"]
    for _ in range(2000):
        if (await api.stage(stage_id))["status"] == "COMPLETED":
            break
        await asyncio.sleep(0.005)
    stop.set()
    await asyncio.gather(*workers)
    summary = (await api.stage(stage_id))["summary"]
    assert summary["completed"] == 30 and summary["total"] == 30
    assert len(handed) == 29 and set(handed.values()) == {1}, "each task handed out once"
    # The job waits for its second stage now.
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"
