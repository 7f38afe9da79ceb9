"""Bad input to the extension endpoints and fields: 400 `{message, code}`, nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants
from .test_bad_input import _assert_error

LEASE = "00000000-0000-4000-8000-000000000001"

REPORTS: list[tuple[str, dict[str, Any]]] = [
    ("RETRIED without delay", {"status": "RETRIED"}),
    ("delay without RETRIED", {"status": "FAILED", "retryAfterSeconds": 3}),
    ("negative delay", {"status": "RETRIED", "retryAfterSeconds": -1}),
    ("delay over a week", {"status": "RETRIED", "retryAfterSeconds": 10**7}),
    ("delay as text", {"status": "RETRIED", "retryAfterSeconds": "5"}),
    ("result with FAILED", {"status": "FAILED", "result": {"a": 1}}),
    ("result not an object", {"status": "COMPLETED", "result": [1]}),
    ("reason with COMPLETED", {"status": "COMPLETED", "reason": "x"}),
    ("reason too long", {"status": "FAILED", "reason": "x" * 2001}),
    ("reason with NUL", {"status": "FAILED", "reason": "a\u0000"}),
    ("retryable with COMPLETED", {"status": "COMPLETED", "retryable": False}),
    ("retryable as text", {"status": "FAILED", "retryable": "no"}),
    ("lease not a uuid", {"status": "COMPLETED", "leaseId": "lease"}),
    ("unknown field", {"status": "COMPLETED", "colour": "red"}),
]

HEARTBEATS: list[tuple[str, Any]] = [
    ("no lease", {}),
    ("lease not a uuid", {"leaseId": "x"}),
    ("progress over 100", {"leaseId": LEASE, "progress": 101}),
    ("progress negative", {"leaseId": LEASE, "progress": -1}),
    ("progress as float", {"leaseId": LEASE, "progress": 1.5}),
    ("lease too short", {"leaseId": LEASE, "leaseSeconds": 0.5}),
    ("lease too long", {"leaseId": LEASE, "leaseSeconds": 10**7}),
    ("unknown field", {"leaseId": LEASE, "x": 1}),
    ("not an object", [LEASE]),
]

CLAIMS: list[tuple[str, Any]] = [
    ("no types", {}),
    ("empty types", {"stageTypes": []}),
    ("too many types", {"stageTypes": [f"t{i}" for i in range(21)]}),
    ("empty type name", {"stageTypes": [""]}),
    ("limit zero", {"stageTypes": ["a"], "limit": 0}),
    ("limit over 100", {"stageTypes": ["a"], "limit": 101}),
    ("lease too short", {"stageTypes": ["a"], "leaseSeconds": 0}),
    ("worker too long", {"stageTypes": ["a"], "worker": "w" * 101}),
    ("unknown field", {"stageTypes": ["a"], "x": 1}),
]

POLICIES: list[tuple[str, Any]] = [
    ("missing initial delay", {}),
    ("negative initial delay", {"initialDelaySeconds": -1}),
    ("multiplier below 1", {"initialDelaySeconds": 1, "multiplier": 0.5}),
    ("max delay over a week", {"initialDelaySeconds": 1, "maxDelaySeconds": 10**7}),
    ("initial as text", {"initialDelaySeconds": "1"}),
    ("unknown field", {"initialDelaySeconds": 1, "jitter": True}),
]


async def claimed_task(api: Api) -> dict[str, Any]:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("bad"))
    await api.create_tasks(stage["id"])
    task = await api.dequeue(stage["type"])
    assert task is not None
    return task


@pytest.mark.parametrize(("case", "body"), REPORTS, ids=[c for c, _ in REPORTS])
async def test_bad_reports(api: Api, db: Database, case: str, body: dict[str, Any]) -> None:
    task = await claimed_task(api)
    _assert_error(await api.http.put(f"/v1/tasks/{task['id']}/status", json=body), 400)
    batch = {"reports": [{"taskId": task["id"], **body}]}
    _assert_error(await api.http.post("/v1/tasks/reports", json=batch), 400)
    assert (await api.task(task["id"]))["status"] == "IN_PROGRESS"
    await assert_invariants(db)


_TASK = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"reports": []},
        {"reports": [{"status": "COMPLETED"}]},
        {"reports": "x"},
        {"reports": [{"taskId": _TASK, "status": "COMPLETED"}], "withTasks": "no"},
    ],
)
async def test_bad_batch_reports(api: Api, body: Any) -> None:
    _assert_error(await api.http.post("/v1/tasks/reports", json=body), 400)


@pytest.mark.parametrize(("case", "body"), HEARTBEATS, ids=[c for c, _ in HEARTBEATS])
async def test_bad_heartbeats(api: Api, case: str, body: Any) -> None:
    task = await claimed_task(api)
    _assert_error(await api.http.post(f"/v1/tasks/{task['id']}/heartbeat", json=body), 400)
    assert (await api.task(task["id"]))["leaseExpiresAt"] == task["leaseExpiresAt"]


async def test_heartbeat_for_an_unknown_task_is_404(api: Api) -> None:
    response = await api.http.post(f"/v1/tasks/{LEASE}/heartbeat", json={"leaseId": LEASE})
    _assert_error(response, 404, "TASK_NOT_FOUND")


@pytest.mark.parametrize(("case", "body"), CLAIMS, ids=[c for c, _ in CLAIMS])
async def test_bad_claims(api: Api, case: str, body: Any) -> None:
    _assert_error(await api.http.post("/v1/tasks/claim", json=body), 400)


@pytest.mark.parametrize(
    "params",
    [{"lease_seconds": 0}, {"lease_seconds": "x"}, {"lease_seconds": "nan"}, {"worker": ""}],
)
async def test_bad_dequeue_parameters(api: Api, db: Database, params: dict[str, Any]) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("dq"))
    await api.create_tasks(stage["id"])
    response = await api.http.patch(f"/v1/stages/{stage['type']}/tasks/dequeue", params=params)
    _assert_error(response, 400)
    assert (await api.stage(stage["id"]))["summary"]["pending"] == 1


@pytest.mark.parametrize(("case", "policy"), POLICIES, ids=[c for c, _ in POLICIES])
async def test_bad_retry_policies(api: Api, case: str, policy: Any) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    tasks = [{"data": {}, "retryPolicy": policy}]
    _assert_error(await api.http.post(f"/v1/stages/{stage['id']}/tasks", json=tasks), 400)
    bad_stage = {"type": "t", "data": {}, "retryPolicy": policy}
    _assert_error(await api.http.post(f"/v1/jobs/{job['id']}/stage", json=bad_stage), 400)
    assert (await api.stage(stage["id"]))["summary"]["total"] == 0


async def test_bad_event_pages(api: Api) -> None:
    job = await api.create_job()
    for params in ({"page": 0}, {"page_size": 1001}, {"page_size": "x"}):
        response = await api.http.get(f"/v1/jobs/{job['id']}/events", params=params)
        _assert_error(response, 400)
    _assert_error(await api.http.get("/v1/jobs/nope/events"), 400)
