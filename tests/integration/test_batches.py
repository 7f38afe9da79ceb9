"""Batch claim over several stage types and batch report with per-item outcomes."""

from __future__ import annotations

import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants


async def test_batch_claim_takes_priority_then_age_across_types(api: Api, db: Database) -> None:
    a, b = unique("a"), unique("b")
    low = await api.create_job("LOW")
    high = await api.create_job("HIGH")
    low_a = await api.create_tasks((await api.create_stage(low["id"], a))["id"], 2)
    high_b = await api.create_tasks((await api.create_stage(high["id"], b))["id"], 2)
    got = await api.call(
        "POST", "/v1/tasks/claim", json={"stageTypes": [a, b], "limit": 3, "leaseSeconds": 30}
    )
    ids = [t["id"] for t in got["items"]]
    assert ids == [high_b[0]["id"], high_b[1]["id"], low_a[0]["id"]]
    assert all(t["status"] == "IN_PROGRESS" and t["leaseId"] for t in got["items"])
    assert len({t["leaseId"] for t in got["items"]}) == 3
    rest = await api.call("POST", "/v1/tasks/claim", json={"stageTypes": [a, b], "limit": 10})
    assert [t["id"] for t in rest["items"]] == [low_a[1]["id"]]
    empty = await api.call("POST", "/v1/tasks/claim", json={"stageTypes": [a, b]})
    assert empty == {"items": []}
    for job in (low, high):
        assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"
    await assert_invariants(db)


@pytest.mark.parametrize("with_tasks", [True, False], ids=["with tasks", "briefly"])
async def test_a_batch_settles_each_report_alone(api: Api, db: Database, with_tasks: bool) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("rep"))
    await api.create_tasks(stage["id"], 4, maxAttempts=2)
    claimed = (
        await api.call("POST", "/v1/tasks/claim", json={"stageTypes": [stage["type"]], "limit": 4})
    )["items"]
    reports = [
        {"taskId": claimed[0]["id"], "status": "COMPLETED", "leaseId": claimed[0]["leaseId"]},
        {"taskId": claimed[1]["id"], "status": "COMPLETED", "leaseId": claimed[0]["leaseId"]},
        {"taskId": claimed[2]["id"], "status": "FAILED", "leaseId": claimed[2]["leaseId"]},
        {"taskId": "00000000-0000-4000-8000-000000000000", "status": "COMPLETED"},
        {"taskId": claimed[3]["id"], "status": "COMPLETED", "result": {"ok": True}},
    ]
    # `withTasks: false`: the same settling, each outcome answered without its task.
    body = {"reports": reports} | ({} if with_tasks else {"withTasks": False})
    got = (await api.call("POST", "/v1/tasks/reports", json=body))["items"]
    assert [r["taskId"] for r in got] == [r["taskId"] for r in reports]
    errors = [r["error"]["code"] if "error" in r else None for r in got]
    assert errors == [None, "LEASE_LOST", None, "TASK_NOT_FOUND", None]
    answered = [r["task"]["status"] if "task" in r else None for r in got]
    if with_tasks:
        assert answered == ["COMPLETED", None, "RETRIED", None, "COMPLETED"]
        assert got[4]["task"]["result"] == {"ok": True}
    else:
        assert answered == [None] * 5
    # The refused report left its task as it was; the others stand.
    assert (await api.task(claimed[1]["id"]))["status"] == "IN_PROGRESS"
    assert (await api.task(claimed[3]["id"]))["result"] == {"ok": True}
    summary = (await api.stage(stage["id"]))["summary"]
    assert (summary["completed"], summary["inProgress"], summary["retried"]) == (2, 1, 1)
    await assert_invariants(db)
