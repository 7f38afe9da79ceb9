"""Progress with a message, over HTTP on the manager (SQLite and PostgreSQL, in-process)
and on the fake alike: a heartbeat may carry `progress`, `message`, `current` and
`total`; the task shows them; a completed task is at 100; stages and jobs carry a
`progress` that counts their running tasks, while v1's `percentage` keeps its meaning."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.api import Api, unique

# `api`: the manager on each backend, or the fake, over HTTP (conftest.py).


async def _running(api: Api, tasks: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = unique("progress")
    job = await api.create_job(
        stages=[{"type": kind, "data": {}, "tasks": [{"data": {"n": n}} for n in range(tasks)]}]
    )
    assert job["progress"] == 0 and job["stages"][0]["progress"] == 0
    claimed = [await api.dequeue(kind) for _ in range(tasks)]
    assert all(claimed)
    return job, claimed  # type: ignore[return-value]


async def _beat(api: Api, task: dict[str, Any], expect: int = 200, **fields: Any) -> Any:
    return await api.call(
        "POST",
        f"/v1/tasks/{task['id']}/heartbeat",
        expect,
        json={"leaseId": task["leaseId"], **fields},
    )


async def test_a_heartbeat_carries_progress_and_a_message_the_task_shows(api: Api) -> None:
    _, [task] = await _running(api, 1)
    await _beat(api, task, progress=30, message="rendering zoom 3")
    shown = await api.task(task["id"])
    assert (shown["progress"], shown["progressMessage"]) == (30, "rendering zoom 3")
    await _beat(api, task, current=3, total=4)  # the percentage follows; the message stays
    shown = await api.task(task["id"])
    assert (shown["progress"], shown["progressMessage"]) == (75, "rendering zoom 3")
    await _beat(api, task, message="writing tiles")
    assert (await api.task(task["id"]))["progressMessage"] == "writing tiles"
    done = await api.report(task["id"], "COMPLETED")
    assert done["progress"] == 100


async def test_stages_and_jobs_move_smoothly_with_their_running_tasks(api: Api) -> None:
    job, tasks = await _running(api, 4)
    for task in tasks:
        await _beat(api, task, progress=50)
    stage_id = job["stages"][0]["id"]
    stage = await api.stage(stage_id)
    assert (stage["progress"], stage["percentage"]) == (50, 0)
    assert (await api.job(job["id"]))["progress"] == 50
    await api.report(tasks[0]["id"], "COMPLETED")
    await api.report(tasks[1]["id"], "COMPLETED")
    stage = await api.stage(stage_id)
    assert (stage["progress"], stage["percentage"]) == (75, 50)
    listed = await api.call("GET", "/v1/jobs", params={"job_name": job["name"]})
    assert listed["items"][0]["progress"] == 75
    with_stages = await api.job(job["id"], should_return_stages="true")
    assert with_stages["stages"][0]["progress"] == 75
    for task in tasks[2:]:
        await api.report(task["id"], "COMPLETED")
    done = await api.job(job["id"])
    assert (done["status"], done["progress"], done["percentage"]) == ("COMPLETED", 100, 100)


async def test_a_job_of_several_stages_counts_each_stage_alike(api: Api) -> None:
    first, second = unique("first"), unique("second")
    job = await api.create_job(
        stages=[
            {"type": first, "data": {}, "tasks": [{"data": {}}, {"data": {}}]},
            {"type": second, "data": {}, "tasks": [{"data": {}}]},
        ]
    )
    await api.run_one(first)
    running = await api.dequeue(first)
    assert running is not None
    await _beat(api, running, progress=40)
    # First stage: (100 + 40) / 2 = 70; second: 0; the job: their mean.
    assert (await api.job(job["id"]))["progress"] == 35


@pytest.mark.parametrize(
    "fields",
    [
        {"progress": 101},
        {"progress": -1},
        {"progress": 50.5},
        {"message": "x" * 501},
        {"message": "nul\u0000"},
        {"message": 7},
        {"current": 5, "total": 4},
        {"current": 1},
        {"total": 0, "current": 0},
    ],
    ids=lambda f: ",".join(f"{k}={str(v)[:8]}" for k, v in f.items()),
)
async def test_bad_progress_is_refused_and_changes_nothing(
    api: Api, fields: dict[str, Any]
) -> None:
    _, [task] = await _running(api, 1)
    await _beat(api, task, progress=10, message="before")
    before = await api.task(task["id"])
    refused = await _beat(api, task, 400, **fields)
    assert refused["code"] == "VALIDATION_ERROR"
    assert await api.task(task["id"]) == before, "a refused heartbeat renews nothing"


async def test_a_batch_of_heartbeats_carries_messages_too(api: Api) -> None:
    _, tasks = await _running(api, 2)
    answer = await api.call(
        "POST",
        "/v1/tasks/heartbeats",
        json={
            "heartbeats": [
                {"taskId": tasks[0]["id"], "leaseId": tasks[0]["leaseId"], "message": "a"},
                {
                    "taskId": tasks[1]["id"],
                    "leaseId": tasks[1]["leaseId"],
                    "current": 1,
                    "total": 3,
                },
            ]
        },
    )
    assert all("error" not in item for item in answer["items"])
    first, second = [await api.task(t["id"]) for t in tasks]
    assert first["progressMessage"] == "a" and "progress" not in first
    assert second["progress"] == 33 and "progressMessage" not in second
