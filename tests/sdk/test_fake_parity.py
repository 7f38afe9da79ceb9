"""The fake against the manager: each scenario runs through the SDK on the FakeJobnik and
on the manager in-process (SQLite and PostgreSQL), and must leave the same full event
history (order, reasons, attempts, leases and workers included) and the same final
state of every job, stage and task. The fake has rules of its own; this is what keeps
them the manager's."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest

from jobnik_manager.app import create_app
from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings
from jobnik_sdk import (
    IllegalTransitionError,
    JobnikClient,
    LeaseLostError,
    NewStage,
    NewTask,
    NotFoundError,
    Priority,
    TaskHeartbeat,
    TaskReport,
    TaskRetryPolicy,
)
from jobnik_sdk.testing import FakeJobnik, FakeManager

from .conftest import in_process_client
from .parity import Env, Scenario, manager_advance, outcome

SECOND = timedelta(seconds=1)


async def _claim_one(client: JobnikClient, kind: str, **options: object) -> uuid.UUID:
    task = await client.dequeue(kind, **options)  # type: ignore[arg-type]
    assert task is not None, f"no {kind} task was ready"
    return task.id


async def stages_run_in_order(env: Env) -> list[uuid.UUID]:
    """Two stages: a batch claim and a batch report, then the next stage's task."""
    c = env.client
    job = await c.create_job(
        "ordered",
        stages=[
            NewStage(type="p-first", tasks=[NewTask(data={"i": 0}), NewTask(data={"i": 1})]),
            NewStage(type="p-second", tasks=[NewTask()]),
        ],
    )
    claimed = await c.claim("p-first", limit=5, worker="w-1")
    assert len(claimed) == 2
    await c.report_many(
        [TaskReport.completed(t.id, lease_id=t.lease_id, result={"n": 1}) for t in claimed]
    )
    task = await c.dequeue("p-second", worker="w-2")
    assert task is not None
    await c.complete(task.id, lease_id=task.lease_id, result={"done": True})
    return [job.id]


async def failures_spend_attempts_until_the_job_fails(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "failing",
        stages=[
            NewStage(type="p-flaky", tasks=[NewTask(max_attempts=3), NewTask(max_attempts=2)]),
            NewStage(type="p-after", tasks=[NewTask()]),
        ],
    )
    first, second = await c.claim("p-flaky", limit=2, worker="w-flaky")
    await c.fail(first.id, lease_id=first.lease_id, reason="attempt 1")
    for n in (2, 3):
        task = await c.dequeue("p-flaky")
        assert task is not None and task.id == first.id
        await c.fail(task.id, lease_id=task.lease_id, reason=f"attempt {n}")
    # The other task is still running: it may report, but nothing follows from it.
    await c.complete(second.id)
    return [job.id]


async def a_non_retryable_failure_fails_at_once(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "refused",
        stages=[NewStage(type="p-refuse", tasks=[NewTask(max_attempts=5), NewTask()])],
    )
    task = await _claim_one(c, "p-refuse")
    await c.fail(task, reason="bad input", retryable=False)
    return [job.id]


async def waiting_stages_need_approval(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "approved",
        stages=[
            NewStage(type="p-build", tasks=[NewTask()]),
            NewStage(type="p-publish", start_as_waiting=True, tasks=[NewTask()]),
            NewStage(type="p-empty"),
            NewStage(type="p-check", start_as_waiting=True),
        ],
    )
    assert job.stages is not None
    publish, check = job.stages[1].id, job.stages[3].id
    with pytest.raises(IllegalTransitionError):
        await c.approve_stage(publish)  # the stage before it has not completed
    await c.complete(await _claim_one(c, "p-build"))
    assert await c.dequeue("p-publish") is None, "it waits for approval"
    await c.approve_stage(publish)
    await c.approve_stage(publish)  # already PENDING: nothing happens
    await c.complete(await _claim_one(c, "p-publish"))
    await c.approve_stage(check)  # no tasks: it completes, and the job with it
    return [job.id]


async def stages_and_tasks_added_later(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job("grown", priority=Priority.LOW)
    first = await c.add_stage(job.id, "p-grown", tasks=[NewTask(data={"k": 1})])
    await c.add_tasks(first.id, [NewTask(data={"k": 2}), NewTask(data={"k": 3})])
    later = await c.add_stage(job.id, "p-later", start_as_waiting=True)
    await c.add_tasks(later.id, [NewTask()], idempotency_key="add-later-1")
    await c.add_tasks(later.id, [NewTask()], idempotency_key="add-later-1")  # a repeat
    for task in await c.claim("p-grown", limit=3):
        await c.complete(task.id, lease_id=task.lease_id)
    await c.approve_stage(later.id)
    await c.complete(await _claim_one(c, "p-later"))
    return [job.id]


async def pause_resume_and_abort(env: Env) -> list[uuid.UUID]:
    c = env.client
    paused = await c.create_job(
        "paused", stages=[NewStage(type="p-pause", tasks=[NewTask(), NewTask()])]
    )
    running = await _claim_one(c, "p-pause")
    await c.pause(paused.id)
    assert await c.dequeue("p-pause") is None, "a paused job hands nothing out"
    await c.complete(running)  # recorded while paused
    await c.resume(paused.id)
    last = await _claim_one(c, "p-pause")
    await c.pause(paused.id)
    await c.complete(last)  # the last task: the job stays PAUSED until resumed
    await c.resume(paused.id)

    aborted = await c.create_job(
        "aborted",
        stages=[
            NewStage(type="p-abort", tasks=[NewTask(max_attempts=2), NewTask(), NewTask()]),
            NewStage(type="p-abort-next", tasks=[NewTask()]),
            NewStage(type="p-abort-wait", start_as_waiting=True),
        ],
    )
    retried, held = await c.claim("p-abort", limit=2)
    await c.fail(retried.id, lease_id=retried.lease_id, reason="once")
    assert held.lease_id is not None
    await c.abort(aborted.id)
    beat = await c.heartbeat(held.id, held.lease_id)
    assert beat.cancel_requested
    with pytest.raises(IllegalTransitionError):
        await c.abort(aborted.id)
    with pytest.raises(IllegalTransitionError):
        await c.complete(held.id, lease_id=None)
    return [paused.id, aborted.id]


async def priority_decides_which_job_goes_first(env: Env) -> list[uuid.UUID]:
    c = env.client
    older = await c.create_job("older", stages=[NewStage(type="p-prio", tasks=[NewTask()])])
    newer = await c.create_job(
        "newer", priority=Priority.LOW, stages=[NewStage(type="p-prio", tasks=[NewTask()])]
    )
    assert await c.set_priority(newer.id, Priority.HIGH)
    assert not await c.set_priority(newer.id, Priority.HIGH)
    first = await c.dequeue("p-prio", worker="w-prio")
    assert first is not None and first.stage_id == (newer.stages or [])[0].id
    await c.complete(first.id)
    return [older.id, newer.id]


async def retry_delays_hold_a_task_back(env: Env) -> list[uuid.UUID]:
    c = env.client
    policy = TaskRetryPolicy(initial_delay=10 * SECOND, multiplier=3)
    job = await c.create_job(
        "delayed",
        stages=[NewStage(type="p-delay", retry_policy=policy, tasks=[NewTask(max_attempts=3)])],
    )
    task = await _claim_one(c, "p-delay")
    await c.fail(task, reason="busy")
    assert await c.dequeue("p-delay") is None, "held back 10 s"
    await env.advance(11 * SECOND)
    await c.fail(await _claim_one(c, "p-delay"), reason="busy again")
    await env.advance(11 * SECOND)
    assert await c.dequeue("p-delay") is None, "held back 30 s after the second failure"
    await env.advance(20 * SECOND)
    await c.retry_later(await _claim_one(c, "p-delay"), delay=60 * SECOND, reason="later")
    await env.advance(61 * SECOND)
    await c.complete(await _claim_one(c, "p-delay"))
    return [job.id]


async def leases_run_out_into_failed_attempts(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "leased", stages=[NewStage(type="p-lease", tasks=[NewTask(max_attempts=2), NewTask()])]
    )
    task = await c.dequeue("p-lease", lease=5 * SECOND, worker="w-lease")
    assert task is not None and task.lease_id is not None
    await env.advance(3 * SECOND)
    await c.heartbeat(task.id, task.lease_id, progress=40)
    await env.advance(3 * SECOND)  # renewed at 3 s: still held
    await env.advance(3 * SECOND)  # not renewed since: expired
    with pytest.raises(LeaseLostError):
        await c.complete(task.id, lease_id=task.lease_id)
    again = await c.dequeue("p-lease", lease=2 * SECOND, worker="w-lease")
    assert again is not None and again.id == task.id
    await env.advance(3 * SECOND)  # the second attempt runs out too: the job fails
    with pytest.raises(NotFoundError):
        await c.get_task(uuid.uuid4())
    return [job.id]


async def leases_that_run_out_together_settle_together(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "expiring", stages=[NewStage(type="p-expire", tasks=[NewTask(), NewTask(), NewTask()])]
    )
    assert len(await c.claim("p-expire", limit=2, lease=2 * SECOND, worker="w-x")) == 2
    await env.advance(3 * SECOND)
    return [job.id]


async def heartbeats_in_a_batch_keep_some_leases(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "beating",
        stages=[NewStage(type="p-beat", tasks=[NewTask(), NewTask(max_attempts=2), NewTask()])],
    )
    first, second, third = await c.claim("p-beat", limit=3, lease=10 * SECOND)
    await env.advance(5 * SECOND)
    outcomes = await c.heartbeat_many(
        [
            TaskHeartbeat(task_id=first.id, lease_id=first.lease_id or "", progress=10),
            TaskHeartbeat(task_id=second.id, lease_id=uuid.uuid4()),
            TaskHeartbeat(task_id=third.id, lease_id=third.lease_id or "", progress=50),
        ],
        lease=20 * SECOND,
    )
    assert [o.ok for o in outcomes] == [True, False, True]
    await env.advance(6 * SECOND)  # the second's lease ran out; the others were renewed
    reported = await c.report_many(
        [
            TaskReport.completed(first.id, lease_id=first.lease_id),
            TaskReport.completed(second.id, lease_id=second.lease_id),
            TaskReport.completed(third.id, lease_id=third.lease_id),
        ]
    )
    assert [r.ok for r in reported] == [True, False, True]
    await c.complete(await _claim_one(c, "p-beat"))
    return [job.id]


async def a_batch_of_reports_settles_each_on_its_own(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "batched",
        stages=[NewStage(type="p-batch", tasks=[NewTask(max_attempts=2) for _ in range(3)])],
    )
    first, second, third = await c.claim("p-batch", limit=3)
    reported = await c.report_many(
        [
            TaskReport.completed(first.id, lease_id=first.lease_id, result={"k": 1}),
            TaskReport.failed(second.id, lease_id=second.lease_id, reason="flaky"),
            TaskReport.retry_later(third.id, delay=0 * SECOND, reason="not yet"),
            TaskReport.completed(uuid.uuid4()),
        ]
    )
    assert [r.ok for r in reported] == [True, True, True, False]
    for task in await c.claim("p-batch", limit=5):
        await c.complete(task.id, lease_id=task.lease_id)
    return [job.id]


async def a_task_fails_for_good_while_its_job_is_paused(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "paused-failing",
        stages=[
            NewStage(type="p-pf", tasks=[NewTask(), NewTask(), NewTask()]),
            NewStage(type="p-pf-next", tasks=[NewTask()]),
        ],
    )
    failing, running = await c.claim("p-pf", limit=2)
    await c.pause(job.id)
    await c.fail(failing.id, lease_id=failing.lease_id, reason="broken")
    await c.complete(running.id, lease_id=running.lease_id)
    with pytest.raises(IllegalTransitionError):
        await c.resume(job.id)
    return [job.id]


async def approval_while_paused(env: Env) -> list[uuid.UUID]:
    c = env.client
    job = await c.create_job(
        "approve-paused",
        stages=[
            NewStage(type="p-ap", tasks=[NewTask()]),
            NewStage(type="p-ap-next", start_as_waiting=True, tasks=[NewTask()]),
        ],
    )
    assert job.stages is not None
    await c.pause(job.id)
    await c.resume(job.id)  # nothing ran yet: PENDING again
    task = await _claim_one(c, "p-ap")
    await c.pause(job.id)
    await c.complete(task)
    await c.approve_stage(job.stages[1].id)
    assert await c.dequeue("p-ap-next") is None, "the job is paused"
    await c.resume(job.id)
    await c.complete(await _claim_one(c, "p-ap-next"))
    return [job.id]


SCENARIOS: list[Scenario] = [
    stages_run_in_order,
    failures_spend_attempts_until_the_job_fails,
    a_non_retryable_failure_fails_at_once,
    waiting_stages_need_approval,
    stages_and_tasks_added_later,
    pause_resume_and_abort,
    priority_decides_which_job_goes_first,
    retry_delays_hold_a_task_back,
    leases_run_out_into_failed_attempts,
    leases_that_run_out_together_settle_together,
    heartbeats_in_a_batch_keep_some_leases,
    a_batch_of_reports_settles_each_on_its_own,
    a_task_fails_for_good_while_its_job_is_paused,
    approval_while_paused,
]


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time: it moves only when a scenario moves it."""
    return ManualClock()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_the_fake_leaves_the_managers_history(
    scenario: Scenario, db: Database, clock: ManualClock
) -> None:
    async with in_process_client(db) as client:
        job_ids = await scenario(Env(client, manager_advance(db, clock)))
        expected = await outcome(client, job_ids)

    fake = FakeJobnik()

    async def advance(by: timedelta) -> None:
        fake.clock.advance(by)

    job_ids = await scenario(Env(fake.client(), advance))
    actual = await outcome(fake.client(), job_ids)
    assert actual["events"] == expected["events"]
    assert actual["state"] == expected["state"]


# ---- refusals -------------------------------------------------------------------------------


async def refusals(http: httpx.AsyncClient) -> list[tuple[str, int, str | None, str | None]]:
    """Requests the manager refuses, and a few it takes: each answer's status, code, and
    (but for malformed requests, whose wording is the validator's) message."""
    answers: list[tuple[str, int, str | None, str | None]] = []

    async def send(what: str, method: str, path: str, **options: Any) -> httpx.Response:
        response = await http.request(method, path, **options)
        body = response.json() if response.content else {}
        code = body.get("code") if isinstance(body, dict) else None
        message = body.get("message") if code not in (None, "VALIDATION_ERROR") else None
        answers.append((what, response.status_code, code, message))
        return response

    job = (
        await send(
            "create",
            "POST",
            "/v1/jobs",
            json={
                "name": "refusing",
                "data": {},
                "stages": [
                    {"type": "r-first", "data": {}, "tasks": [{"data": {}}, {"data": {}}]},
                    {"type": "r-second", "data": {}, "tasks": [{"data": {}}]},
                ],
            },
        )
    ).json()
    job_id, first, second = job["id"], job["stages"][0], job["stages"][1]
    task_id, missing = first["tasks"][0]["id"], str(uuid.uuid4())
    for what, body in [
        ("short name", {"name": "x", "data": {}}),
        ("long name", {"name": "x" * 51, "data": {}}),
        ("unknown field", {"name": "ok", "data": {}, "colour": 1}),
        ("no data", {"name": "ok"}),
        ("unknown priority", {"name": "ok", "data": {}, "priority": "URGENT"}),
        ("NUL in data", {"name": "ok", "data": {"a": "\u0000"}}),
        ("empty stage type", {"name": "ok", "data": {}, "stages": [{"type": "", "data": {}}]}),
        (
            "no attempts",
            {
                "name": "ok",
                "data": {},
                "stages": [{"type": "t", "data": {}, "tasks": [{"data": {}, "maxAttempts": 0}]}],
            },
        ),
        (
            "slow multiplier",
            {
                "name": "ok",
                "data": {},
                "stages": [
                    {
                        "type": "t",
                        "data": {},
                        "retryPolicy": {"initialDelaySeconds": 1, "multiplier": 0.5},
                    }
                ],
            },
        ),
        ("string limit", {"name": "ok", "data": {}, "stages": [{"type": 5, "data": {}}]}),
    ]:
        await send(what, "POST", "/v1/jobs", json=body)
    await send(
        "not JSON", "POST", "/v1/jobs", content=b"{", headers={"content-type": "application/json"}
    )
    await send("bad id", "GET", "/v1/jobs/not-a-uuid")
    await send("no such job", "GET", f"/v1/jobs/{missing}")
    await send("no such stage", "GET", f"/v1/stages/{missing}")
    await send("no such task", "GET", f"/v1/tasks/{missing}")
    await send("no such route", "GET", "/v1/nowhere")
    await send("no such method", "DELETE", "/v1/tasks/claim")
    await send("final target", "PUT", f"/v1/jobs/{job_id}/status", json={"status": "COMPLETED"})
    await send("same status", "PUT", f"/v1/jobs/{job_id}/status", json={"status": "PENDING"})
    await send(
        "early approval", "PUT", f"/v1/stages/{second['id']}/status", json={"status": "PENDING"}
    )
    await send(
        "approval target", "PUT", f"/v1/stages/{second['id']}/status", json={"status": "COMPLETED"}
    )
    await send(
        "report unclaimed", "PUT", f"/v1/tasks/{task_id}/status", json={"status": "COMPLETED"}
    )
    await send(
        "retry without delay", "PUT", f"/v1/tasks/{task_id}/status", json={"status": "RETRIED"}
    )
    await send(
        "reason on completion",
        "PUT",
        f"/v1/tasks/{task_id}/status",
        json={"status": "COMPLETED", "reason": "x"},
    )
    await send("report missing", "PUT", f"/v1/tasks/{missing}/status", json={"status": "COMPLETED"})
    for what, claim in [
        ("no types", {"stageTypes": []}),
        ("too many", {"stageTypes": ["r-first"], "limit": 101}),
        ("long wait", {"stageTypes": ["r-first"], "waitSeconds": 61}),
        ("short lease", {"stageTypes": ["r-first"], "leaseSeconds": 0.5}),
        ("limit as text", {"stageTypes": ["r-first"], "limit": "1"}),
    ]:
        await send(what, "POST", "/v1/tasks/claim", json=claim)
    await send("long type", "PATCH", f"/v1/stages/{'t' * 51}/tasks/dequeue")
    await send("lease of 0", "PATCH", "/v1/stages/r-first/tasks/dequeue?lease_seconds=0")
    await send("nothing ready", "PATCH", "/v1/stages/r-none/tasks/dequeue")
    claimed = (
        await send("dequeue", "PATCH", "/v1/stages/r-first/tasks/dequeue?lease_seconds=60")
    ).json()
    lease = claimed["leaseId"]
    await send(
        "other lease",
        "PUT",
        f"/v1/tasks/{claimed['id']}/status",
        json={"status": "COMPLETED", "leaseId": missing},
    )
    await send(
        "beat other lease",
        "POST",
        f"/v1/tasks/{claimed['id']}/heartbeat",
        json={"leaseId": missing},
    )
    await send(
        "beat progress",
        "POST",
        f"/v1/tasks/{claimed['id']}/heartbeat",
        json={"leaseId": lease, "progress": 101},
    )
    await send("no reports", "POST", "/v1/tasks/reports", json={"reports": []})
    beats = [{"taskId": missing, "leaseId": missing}] * 101
    await send("too many beats", "POST", "/v1/tasks/heartbeats", json={"heartbeats": beats})
    await send("no tasks", "POST", f"/v1/stages/{second['id']}/tasks", json=[])
    await send(
        "tasks to a running stage", "POST", f"/v1/stages/{first['id']}/tasks", json=[{"data": {}}]
    )
    await send("big page", "GET", "/v1/jobs?page_size=101")
    await send("big events page", "GET", f"/v1/jobs/{job_id}/events?page_size=1001")
    await send("metadata list", "PATCH", f"/v1/jobs/{job_id}/user-metadata", json=[1])
    await send("same priority", "PATCH", f"/v1/jobs/{job_id}/priority", json={"priority": "MEDIUM"})
    await send("unknown priority", "PATCH", f"/v1/jobs/{job_id}/priority", json={"priority": "X"})
    await send("delete running", "DELETE", f"/v1/jobs/{job_id}")
    key = {"Idempotency-Key": "refusals-1"}
    await send("keyed", "POST", "/v1/jobs", json={"name": "keyed", "data": {}}, headers=key)
    await send("key reused", "POST", "/v1/jobs", json={"name": "other", "data": {}}, headers=key)
    await send("abort", "PUT", f"/v1/jobs/{job_id}/status", json={"status": "ABORTED"})
    await send(
        "stage to aborted", "POST", f"/v1/jobs/{job_id}/stage", json={"type": "t", "data": {}}
    )
    await send("tasks to aborted", "POST", f"/v1/stages/{second['id']}/tasks", json=[{"data": {}}])
    await send(
        "report aborted", "PUT", f"/v1/tasks/{claimed['id']}/status", json={"status": "FAILED"}
    )
    return answers


async def test_the_fake_refuses_what_the_manager_refuses(db: Database) -> None:
    app = create_app(Settings(database_url=db.url), database=db)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://m"
    ) as http:
        expected = await refusals(http)
    fake = FakeManager()
    async with httpx.AsyncClient(transport=fake.transport, base_url="http://f") as http:
        actual = await refusals(http)
    assert actual == expected
