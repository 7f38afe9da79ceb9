"""Retry policies' jitter and non-retryable error types, through the HTTP API on both
backends: a failure of a named error type ends the task whatever attempts it has left,
any other is tried again; jitter spreads the waits below the policy's delay; bad
policies and reports answer 400 and change nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def leased(api: Api, stage_type: str) -> dict[str, Any]:
    claimed = await api.dequeue(stage_type)
    assert claimed is not None
    return claimed


async def fail(api: Api, task: dict[str, Any], expect: int = 200, **body: Any) -> Any:
    return await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        expect,
        json={"status": "FAILED", "leaseId": task["leaseId"], **body},
    )


POLICY = {"initialDelaySeconds": 0, "nonRetryableErrors": ["ValidationError", "KeyError"]}


async def claim(api: Api, stage_type: str, n: int) -> list[dict[str, Any]]:
    body = {"stageTypes": [stage_type], "limit": n}
    return (await api.call("POST", "/v1/tasks/claim", 200, json=body))["items"]  # type: ignore[no-any-return]


async def test_a_named_error_type_fails_the_task_for_good(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("typed"), retryPolicy=POLICY)
    tasks = await api.create_tasks(stage["id"], 2, maxAttempts=3)
    assert tasks[0]["retryPolicy"]["nonRetryableErrors"] == ["ValidationError", "KeyError"]
    flaky, fatal = await claim(api, stage["type"], 2)

    again = await fail(api, flaky, errorType="TimeoutError", reason="slow tile server")
    assert (again["status"], again["attempts"], again["reason"]) == (
        "RETRIED",
        1,
        "slow tile server",
    )
    ended = await fail(api, fatal, errorType="ValidationError")
    # Attempts were left, but the error type is one the policy names; with no reason
    # given, the type is the reason.
    assert (ended["status"], ended["attempts"], ended["reason"]) == (
        "FAILED",
        1,
        "ValidationError",
    )
    assert (await api.job(job["id"]))["status"] == "FAILED"
    await assert_invariants(db)


async def test_a_task_without_a_policy_retries_any_error_type(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("untyped"))
    await api.create_tasks(stage["id"], maxAttempts=2)
    claimed = await leased(api, stage["type"])
    again = await fail(api, claimed, errorType="ValidationError")
    assert (again["status"], again["attempts"]) == ("RETRIED", 1)


async def test_jitter_spreads_the_waits_below_the_policys_delay(
    api: Api, db: Database, clock: ManualClock
) -> None:
    policy = {"initialDelaySeconds": 100, "multiplier": 2, "jitter": 0.5}
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("jitter"), retryPolicy=policy)
    await api.create_tasks(stage["id"], 12, maxAttempts=2)
    assert (await api.stage(stage["id"]))["retryPolicy"]["jitter"] == 0.5
    waits = []
    for _ in range(12):
        claimed = await leased(api, stage["type"])
        failed = await fail(api, claimed)
        assert failed["status"] == "RETRIED"
        not_before = datetime.fromisoformat(failed["notBefore"])
        waits.append((not_before - datetime.fromisoformat(failed["updateTime"])).total_seconds())
    assert all(50 <= wait <= 100 for wait in waits), waits
    # Twelve draws from 50-100 s, to the microsecond: all alike only if jitter did nothing.
    assert len(set(waits)) > 1, waits
    await assert_invariants(db)


async def test_a_policy_without_jitter_or_types_reads_as_before(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("plain"))
    (task,) = await api.create_tasks(stage["id"], retryPolicy={"initialDelaySeconds": 3})
    assert task["retryPolicy"] == {
        "initialDelaySeconds": 3.0,
        "multiplier": 2.0,
        "maxDelaySeconds": 3600.0,
    }


BAD_POLICIES = [
    ("jitter above 1", {"initialDelaySeconds": 1, "jitter": 1.5}),
    ("negative jitter", {"initialDelaySeconds": 1, "jitter": -0.1}),
    ("jitter as text", {"initialDelaySeconds": 1, "jitter": "0.5"}),
    ("types not a list", {"initialDelaySeconds": 1, "nonRetryableErrors": "ValidationError"}),
    ("an empty type", {"initialDelaySeconds": 1, "nonRetryableErrors": [""]}),
    ("a type not text", {"initialDelaySeconds": 1, "nonRetryableErrors": [7]}),
    ("a long type", {"initialDelaySeconds": 1, "nonRetryableErrors": ["E" * 201]}),
    ("too many types", {"initialDelaySeconds": 1, "nonRetryableErrors": ["E"] * 51}),
    ("maximum below initial", {"initialDelaySeconds": 10, "maxDelaySeconds": 5}),
]


@pytest.mark.parametrize(("case", "policy"), BAD_POLICIES, ids=[c for c, _ in BAD_POLICIES])
async def test_a_bad_policy_is_refused_and_makes_nothing(
    api: Api, case: str, policy: dict[str, Any]
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("bad"))
    refused = await api.call(
        "POST",
        f"/v1/stages/{stage['id']}/tasks",
        400,
        json=[{"data": {}, "retryPolicy": policy}],
    )
    assert refused["code"] == "VALIDATION_ERROR" and refused["message"]
    assert (await api.stage(stage["id"]))["summary"]["total"] == 0


BAD_REPORTS = [
    ("with COMPLETED", {"status": "COMPLETED", "errorType": "ValidationError"}),
    ("with RETRIED", {"status": "RETRIED", "retryAfterSeconds": 1, "errorType": "E"}),
    ("empty", {"status": "FAILED", "errorType": ""}),
    ("too long", {"status": "FAILED", "errorType": "E" * 201}),
    ("not text", {"status": "FAILED", "errorType": ["ValidationError"]}),
    ("a NUL", {"status": "FAILED", "errorType": "Bad\u0000Type"}),
]


@pytest.mark.parametrize(("case", "body"), BAD_REPORTS, ids=[c for c, _ in BAD_REPORTS])
async def test_a_bad_error_type_is_refused_and_changes_nothing(
    api: Api, case: str, body: dict[str, Any]
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("badtype"), retryPolicy=POLICY)
    await api.create_tasks(stage["id"], maxAttempts=3)
    claimed = await leased(api, stage["type"])
    refused = await api.call(
        "PUT",
        f"/v1/tasks/{claimed['id']}/status",
        400,
        json={"leaseId": claimed["leaseId"], **body},
    )
    assert refused["code"] == "VALIDATION_ERROR" and refused["message"]
    task = await api.task(claimed["id"])
    assert (task["status"], task["attempts"], task["leaseId"]) == (
        "IN_PROGRESS",
        0,
        claimed["leaseId"],
    )


async def test_a_batch_report_carries_the_error_type(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("batched"), retryPolicy=POLICY)
    await api.create_tasks(stage["id"], 2, maxAttempts=3)
    claimed = await claim(api, stage["type"], 2)
    answers = (
        await api.call(
            "POST",
            "/v1/tasks/reports",
            200,
            json={
                "reports": [
                    {
                        "taskId": claimed[0]["id"],
                        "leaseId": claimed[0]["leaseId"],
                        "status": "FAILED",
                        "errorType": "KeyError",
                        "reason": "KeyError: 'zoom'",
                    },
                    {
                        "taskId": claimed[1]["id"],
                        "leaseId": claimed[1]["leaseId"],
                        "status": "FAILED",
                        "errorType": "OSError",
                    },
                ]
            },
        )
    )["items"]
    statuses = {item["taskId"]: item["task"]["status"] for item in answers}
    assert statuses == {claimed[0]["id"]: "FAILED", claimed[1]["id"]: "RETRIED"}
    await assert_invariants(db)
