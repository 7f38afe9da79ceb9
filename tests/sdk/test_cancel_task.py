"""Cancelling one task (`PUT /v1/tasks/{id}/status {"status": "ABORTED"}`), over HTTP on
the manager (SQLite and PostgreSQL, in-process) and on the fake alike: a waiting, a
retried or a running task becomes ABORTED; its holder hears of it at its next heartbeat
and its late report is refused; it counts as neither completed nor failed for its stage,
which completes when its other tasks are done."""

from __future__ import annotations

import asyncio
from typing import Any

from ..support.api import Api, unique

# `api`: the manager on each backend, or the fake, over HTTP (conftest.py).


async def _stages(api: Api, *task_counts: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A job of one stage per count, created in one call."""
    specs = [
        {"type": unique(f"s{i}"), "data": {}, "tasks": [{"data": {"n": n}} for n in range(count)]}
        for i, count in enumerate(task_counts)
    ]
    job = await api.create_job(stages=specs)
    return job, job["stages"]


async def _cancel(api: Api, task_id: str, expect: int = 200, **body: Any) -> Any:
    return await api.call(
        "PUT", f"/v1/tasks/{task_id}/status", expect, json={"status": "ABORTED", **body}
    )


async def test_a_waiting_task_is_cancelled_and_its_stage_completes_without_it(api: Api) -> None:
    job, [stage, after] = await _stages(api, 3, 1)
    waiting = stage["tasks"][1]
    cancelled = await _cancel(api, waiting["id"])
    assert (cancelled["status"], cancelled["reason"]) == ("ABORTED", "cancelled by user")
    assert "endTime" in cancelled
    claimed = [await api.dequeue(stage["type"]) for _ in range(3)]
    assert claimed[2] is None, "a cancelled task is never handed out"
    assert {t["id"] for t in claimed if t} == {stage["tasks"][0]["id"], stage["tasks"][2]["id"]}
    for task in claimed[:2]:
        assert task is not None
        await api.report(task["id"], "COMPLETED")
    done = await api.stage(stage["id"])
    assert done["status"] == "COMPLETED"
    assert (done["summary"]["completed"], done["summary"]["aborted"]) == (2, 1)
    assert (await api.stage(after["id"]))["status"] == "PENDING"
    await api.run_one(after["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_a_retried_task_is_cancelled_with_the_reason_given(api: Api) -> None:
    kind = unique("retried")
    job = await api.create_job(
        stages=[{"type": kind, "data": {}, "tasks": [{"data": {}, "maxAttempts": 3}]}]
    )
    task = await api.dequeue(kind)
    assert task is not None
    await api.report(task["id"], "FAILED")
    assert (await api.task(task["id"]))["status"] == "RETRIED"
    cancelled = await _cancel(api, task["id"], reason="not needed any more")
    assert (cancelled["status"], cancelled["reason"]) == ("ABORTED", "not needed any more")
    assert cancelled["attempts"] == 1, "a cancel spends no attempt"
    assert await api.dequeue(kind) is None
    # Its stage had no other task: it completes, and the job with it.
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_a_running_task_is_cancelled_its_holder_told_and_its_report_refused(
    api: Api,
) -> None:
    job, [stage] = await _stages(api, 2)
    running = await api.dequeue(stage["type"])
    assert running is not None
    lease = running["leaseId"]
    await _cancel(api, running["id"])
    beat = await api.call("POST", f"/v1/tasks/{running['id']}/heartbeat", json={"leaseId": lease})
    assert beat["cancelRequested"] is True
    late = await api.call(
        "PUT",
        f"/v1/tasks/{running['id']}/status",
        409,
        json={"status": "COMPLETED", "leaseId": lease},
    )
    assert late["code"] == "LEASE_LOST"
    no_lease = await api.report(running["id"], "COMPLETED", expect=400)
    assert no_lease["code"] == "ILLEGAL_TASK_STATUS_TRANSITION"
    assert (await api.task(running["id"]))["status"] == "ABORTED"
    await api.run_one(stage["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_a_final_task_cannot_be_cancelled(api: Api) -> None:
    _, [stage] = await _stages(api, 2)
    done = await api.run_one(stage["type"])
    refused = await _cancel(api, done["id"], 400)
    assert refused["code"] == "ILLEGAL_TASK_STATUS_TRANSITION"
    assert refused["message"] == "Illegal status transition from COMPLETED to ABORTED"
    assert (await api.task(done["id"]))["status"] == "COMPLETED"
    cancelled = stage["tasks"][0]["id"] if stage["tasks"][0]["id"] != done["id"] else None
    other = cancelled or stage["tasks"][1]["id"]
    await _cancel(api, other)
    again = await _cancel(api, other, 400)
    assert again["message"] == "Illegal status transition from ABORTED to ABORTED"
    result = await api.call(
        "PUT", f"/v1/tasks/{other}/status", 400, json={"status": "ABORTED", "result": {}}
    )
    assert result["code"] == "VALIDATION_ERROR"


async def test_cancelling_every_task_of_a_stage_passes_it_now_or_when_its_turn_comes(
    api: Api,
) -> None:
    job, [first, second, third] = await _stages(api, 2, 2, 1)
    for task in second["tasks"]:  # a stage whose turn has not come stays as it is
        await _cancel(api, task["id"])
    assert (await api.stage(second["id"]))["status"] == "CREATED"
    for task in first["tasks"]:
        await _cancel(api, task["id"])
    stages = {
        st["id"]: st for st in (await api.job(job["id"], should_return_stages="true"))["stages"]
    }
    assert [stages[st["id"]]["status"] for st in (first, second, third)] == [
        "COMPLETED",
        "COMPLETED",
        "PENDING",
    ]
    await api.run_one(third["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_a_cancel_racing_a_completion_settles_once(api: Api) -> None:
    _, [stage] = await _stages(api, 20)
    claimed = [await api.dequeue(stage["type"]) for _ in range(20)]
    outcomes: dict[str, list[int]] = {}

    async def complete(task: dict[str, Any]) -> None:
        response = await api.http.put(
            f"/v1/tasks/{task['id']}/status",
            json={"status": "COMPLETED", "leaseId": task["leaseId"]},
        )
        outcomes.setdefault(task["id"], []).append(response.status_code)

    async def cancel(task: dict[str, Any]) -> None:
        response = await api.http.put(f"/v1/tasks/{task['id']}/status", json={"status": "ABORTED"})
        outcomes.setdefault(task["id"], []).append(response.status_code)

    await asyncio.gather(*(f(t) for t in claimed if t for f in (complete, cancel)))
    summary = (await api.stage(stage["id"]))["summary"]
    assert summary["completed"] + summary["aborted"] == 20 and summary["inProgress"] == 0
    assert (await api.stage(stage["id"]))["status"] == "COMPLETED"
    for task_id, codes in outcomes.items():
        assert sorted(codes)[0] == 200 and len([c for c in codes if c == 200]) == 1, codes
        final = await api.task(task_id)
        assert final["status"] in ("COMPLETED", "ABORTED")
    events = await api.call("GET", f"/v1/jobs/{stage['jobId']}/events", params={"page_size": 1000})
    settled = [
        e for e in events["items"] if e["entity"] == "TASK" and e["fromStatus"] == "IN_PROGRESS"
    ]
    assert len(settled) == 20 and len({e["entityId"] for e in settled}) == 20
