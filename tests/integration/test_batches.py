"""Batch claim over several stage types and batch report with per-item outcomes."""

from __future__ import annotations

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


async def test_batch_report_settles_each_report_on_its_own(api: Api, db: Database) -> None:
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
    got = (await api.call("POST", "/v1/tasks/reports", json={"reports": reports}))["items"]
    assert [r["taskId"] for r in got] == [r["taskId"] for r in reports]
    assert got[0]["task"]["status"] == "COMPLETED"
    assert got[1]["error"]["code"] == "LEASE_LOST" and "task" not in got[1]
    assert got[2]["task"]["status"] == "RETRIED"
    assert got[3]["error"]["code"] == "TASK_NOT_FOUND"
    assert got[4]["task"]["result"] == {"ok": True}
    # The refused report left its task as it was; the others stand.
    assert (await api.task(claimed[1]["id"]))["status"] == "IN_PROGRESS"
    summary = (await api.stage(stage["id"]))["summary"]
    assert (summary["completed"], summary["inProgress"], summary["retried"]) == (2, 1, 1)
    await assert_invariants(db)


async def test_a_batch_report_without_tasks_settles_alike(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("brief"))
    await api.create_tasks(stage["id"], 3, maxAttempts=2)
    claimed = (
        await api.call("POST", "/v1/tasks/claim", json={"stageTypes": [stage["type"]], "limit": 3})
    )["items"]
    reports = [
        {"taskId": claimed[0]["id"], "status": "COMPLETED", "leaseId": claimed[0]["leaseId"]},
        {"taskId": claimed[1]["id"], "status": "COMPLETED", "leaseId": claimed[0]["leaseId"]},
        {"taskId": claimed[2]["id"], "status": "FAILED", "leaseId": claimed[2]["leaseId"]},
    ]
    body = {"reports": reports, "withTasks": False}
    got = (await api.call("POST", "/v1/tasks/reports", json=body))["items"]
    # Each outcome names its task; a refusal keeps its error; no task is answered.
    assert got[0] == {"taskId": claimed[0]["id"]}
    assert got[1]["taskId"] == claimed[1]["id"] and got[1]["error"]["code"] == "LEASE_LOST"
    assert got[2] == {"taskId": claimed[2]["id"]}
    assert [(await api.task(t["id"]))["status"] for t in claimed] == [
        "COMPLETED",
        "IN_PROGRESS",
        "RETRIED",
    ]
    await assert_invariants(db)
    bad = await api.http.post("/v1/tasks/reports", json={**body, "withTasks": "no"})
    assert (bad.status_code, bad.json()["code"]) == (400, "VALIDATION_ERROR")
