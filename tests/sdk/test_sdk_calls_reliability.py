"""The reliability calls (leases, heartbeats, detailed reports, retry delays, batch claim
and report, event history, idempotent creates), against the manager (SQLite and
PostgreSQL, through the SDK in-process) and the FakeJobnik, with the same expectations."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_sdk import (
    ConflictError,
    IllegalTransitionError,
    JobnikValidationError,
    JobStatus,
    LeaseLostError,
    NewStage,
    NewTask,
    ReportOutcome,
    RetryLaterError,
    Task,
    TaskReport,
    TaskRetryPolicy,
    TaskStatus,
)

from ..support.api import unique
from .conftest import Surface

SLACK = timedelta(seconds=5)


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time in these tests: leases run out when a test moves it on."""
    return ManualClock()


def near(moment: datetime | None, expected: datetime) -> bool:
    return moment is not None and abs(moment - expected) < SLACK


async def claimed(surface: Surface, kind: str, *tasks: NewTask, **options: object) -> Task:
    await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=list(tasks) or [NewTask()])]
    )
    task = await surface.dequeue(kind, **options)  # type: ignore[arg-type]
    assert task is not None
    return task


async def test_a_claim_takes_a_lease_that_heartbeats_extend(surface: Surface) -> None:
    kind = unique("lease")
    task = await claimed(surface, kind, lease=timedelta(seconds=10), worker="tiler-1")
    now = datetime.now(UTC)
    assert task.lease_id is not None and task.worker == "tiler-1"
    assert near(task.lease_expires_at, now + timedelta(seconds=10))

    beat = await surface.heartbeat(task.id, task.lease_id, progress=40, lease=timedelta(minutes=2))
    assert not beat.cancel_requested and beat.job_status is JobStatus.IN_PROGRESS
    assert near(beat.lease_expires_at, now + timedelta(minutes=2))
    again = await surface.heartbeat(str(task.id), str(task.lease_id))
    assert near(again.lease_expires_at, datetime.now(UTC) + timedelta(minutes=2)), "same length"
    stored = await surface.get_task(task.id)
    assert (stored.progress, stored.lease_id, stored.status) == (
        40,
        task.lease_id,
        TaskStatus.IN_PROGRESS,
    )

    plain = await claimed(surface, unique("plain"))
    assert near(plain.lease_expires_at, datetime.now(UTC) + timedelta(minutes=30))
    assert plain.worker is None


async def test_a_lease_that_is_not_the_tasks_is_lost(surface: Surface) -> None:
    task = await claimed(surface, unique("lost"), NewTask(max_attempts=2))
    with pytest.raises(LeaseLostError) as lost:
        await surface.heartbeat(task.id, uuid.uuid4())
    assert isinstance(lost.value, ConflictError)
    assert (lost.value.status_code, lost.value.code) == (409, "LEASE_LOST")
    with pytest.raises(LeaseLostError):
        await surface.complete(task.id, lease_id=uuid.uuid4())
    with pytest.raises(LeaseLostError):
        await surface.fail(task.id, lease_id=uuid.uuid4(), reason="not mine")
    stored = await surface.get_task(task.id)
    assert (stored.status, stored.attempts) == (TaskStatus.IN_PROGRESS, 0), "nothing changed"


async def test_an_expired_lease_is_lost(
    surface: Surface, advance: Callable[[timedelta], None]
) -> None:
    task = await claimed(surface, unique("expired"), lease=timedelta(seconds=1))
    assert task.lease_id is not None
    advance(timedelta(seconds=1.2))
    with pytest.raises(LeaseLostError):
        await surface.heartbeat(task.id, task.lease_id)
    with pytest.raises(LeaseLostError):
        await surface.complete(task.id, lease_id=task.lease_id)


async def test_complete_stores_the_result_and_a_repeat_is_answered_again(
    surface: Surface,
) -> None:
    task = await claimed(surface, unique("result"))
    done = await surface.complete(task.id, lease_id=task.lease_id, result={"tiles": 12})
    assert (done.status, done.result) == (TaskStatus.COMPLETED, {"tiles": 12})
    repeat = await surface.complete(task.id, lease_id=task.lease_id, result={"tiles": 12})
    assert (repeat.id, repeat.status) == (task.id, TaskStatus.COMPLETED)
    with pytest.raises(LeaseLostError):
        await surface.fail(task.id, lease_id=task.lease_id)
    with pytest.raises(IllegalTransitionError):
        await surface.complete(task.id)  # without a lease: the reference rule
    assert (await surface.get_task(task.id)).result == {"tiles": 12}


async def test_fail_not_retryable_fails_at_once_with_its_reason(surface: Surface) -> None:
    kind = unique("fatal")
    task = await claimed(surface, kind, NewTask(max_attempts=3))
    failed = await surface.fail(
        task.id, lease_id=task.lease_id, reason="upstream 500", retryable=False
    )
    assert (failed.status, failed.attempts, failed.reason) == (
        TaskStatus.FAILED,
        1,
        "upstream 500",
    )
    job = await surface.get_job((await surface.get_stage(task.stage_id)).job_id)
    assert job.status is JobStatus.FAILED

    other = await claimed(surface, unique("flaky"), NewTask(max_attempts=3))
    retried = await surface.fail(other.id, lease_id=other.lease_id, reason="timeout")
    assert (retried.status, retried.attempts, retried.reason) == (
        TaskStatus.RETRIED,
        1,
        "timeout",
    )


async def test_retry_later_keeps_the_attempts_and_sets_not_before(surface: Surface) -> None:
    kind = unique("later")
    task = await claimed(surface, kind, NewTask(max_attempts=1))
    before = datetime.now(UTC)
    later = await surface.retry_later(
        task.id, delay=timedelta(minutes=1), lease_id=task.lease_id, reason="rate limited"
    )
    assert (later.status, later.attempts, later.reason) == (TaskStatus.RETRIED, 0, "rate limited")
    assert near(later.not_before, before + timedelta(minutes=1))
    assert await surface.dequeue(kind) is None, "not before its time"
    assert (await surface.get_summary(later.stage_id)).retried == 1


async def test_a_retry_policy_delays_the_next_attempt(surface: Surface) -> None:
    policy = TaskRetryPolicy(initial_delay=timedelta(seconds=30), max_delay=timedelta(minutes=5))
    kind = unique("policy")
    task = await claimed(surface, kind, NewTask(max_attempts=3, retry_policy=policy))
    assert task.retry_policy == policy
    before = datetime.now(UTC)
    retried = await surface.fail(task.id, lease_id=task.lease_id)
    assert retried.status is TaskStatus.RETRIED
    assert near(retried.not_before, before + timedelta(seconds=30))
    assert await surface.dequeue(kind) is None

    # A stage's policy is the default of its tasks; a task's own (or add_tasks') wins.
    stage_policy = TaskRetryPolicy(initial_delay=timedelta(seconds=5), multiplier=3)
    job = await surface.create_job(unique("job"))
    stage = await surface.add_stage(
        job.id, unique("k"), retry_policy=stage_policy, tasks=[NewTask()]
    )
    assert stage.retry_policy == stage_policy
    assert stage.tasks is not None and stage.tasks[0].retry_policy == stage_policy
    added = await surface.add_tasks(
        stage.id, [NewTask(), NewTask(retry_policy=policy)], retry_policy=policy
    )
    assert [t.retry_policy for t in added] == [policy, policy]
    plain = await surface.add_tasks(stage.id, [NewTask()])
    assert plain[0].retry_policy == stage_policy


async def test_abort_and_pause_are_heard_at_the_next_heartbeat(surface: Surface) -> None:
    kind = unique("steer")
    task = await claimed(surface, kind, NewTask(), NewTask())
    assert task.lease_id is not None
    job_id = (await surface.get_stage(task.stage_id)).job_id
    await surface.pause(job_id)
    paused = await surface.heartbeat(task.id, task.lease_id)
    assert (paused.cancel_requested, paused.job_status) == (False, JobStatus.PAUSED)
    await surface.abort(job_id)
    aborted = await surface.heartbeat(task.id, task.lease_id)
    assert (aborted.cancel_requested, aborted.job_status) == (True, JobStatus.ABORTED)
    with pytest.raises(LeaseLostError):
        await surface.complete(task.id, lease_id=task.lease_id)
    assert (await surface.get_task(task.id)).status is TaskStatus.ABORTED


async def test_batch_claim_and_batch_report(surface: Surface) -> None:
    a, b = unique("a"), unique("b")
    await surface.create_job(
        unique("job"),
        stages=[NewStage(type=a, tasks=[NewTask(data={"n": 0}), NewTask(data={"n": 1})])],
    )
    await surface.create_job(
        unique("job"), stages=[NewStage(type=b, tasks=[NewTask(data={"n": 2}, max_attempts=3)])]
    )
    assert await surface.claim([unique("none")], limit=5) == []
    first = await surface.claim([a, b], limit=2, lease=timedelta(seconds=30), worker="w-1")
    assert [t.data for t in first] == [{"n": 0}, {"n": 1}], "oldest first"
    assert all(t.lease_id is not None and t.worker == "w-1" for t in first)
    rest = await surface.claim(b, limit=5)
    assert [t.data for t in rest] == [{"n": 2}]

    outcomes = await surface.report_many(
        [
            TaskReport.completed(first[0].id, lease_id=first[0].lease_id, result={"ok": True}),
            TaskReport.completed(first[1].id, lease_id=uuid.uuid4()),
            TaskReport.failed(rest[0].id, lease_id=rest[0].lease_id, reason="no", retryable=False),
        ]
    )
    assert [o.task_id for o in outcomes] == [first[0].id, first[1].id, rest[0].id]
    assert [o.ok for o in outcomes] == [True, False, True]
    assert outcomes[0].task is not None and outcomes[0].task.result == {"ok": True}
    assert outcomes[1].error is not None and outcomes[1].error.code == "LEASE_LOST"
    assert outcomes[2].task is not None
    assert (outcomes[2].task.status, outcomes[2].task.reason) == (TaskStatus.FAILED, "no")
    assert (await surface.get_task(first[1].id)).status is TaskStatus.IN_PROGRESS

    with pytest.raises(JobnikValidationError):
        await surface.claim([a], limit=0)
    with pytest.raises(JobnikValidationError):
        await surface.claim([a], lease=timedelta(days=8))


async def test_a_batch_report_without_tasks_answers_each_outcome_briefly(
    surface: Surface,
) -> None:
    kind = unique("brief")
    await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[NewTask(), NewTask(), NewTask()])]
    )
    tasks = await surface.claim(kind, limit=3, lease=timedelta(seconds=30))
    assert len(tasks) == 3
    outcomes = await surface.report_many(
        [
            TaskReport.completed(tasks[0].id, lease_id=tasks[0].lease_id, result={"ok": True}),
            TaskReport.completed(tasks[1].id, lease_id=uuid.uuid4()),
            TaskReport.failed(tasks[2].id, lease_id=tasks[2].lease_id, reason="no"),
        ],
        with_tasks=False,
    )
    assert all(isinstance(o, ReportOutcome) for o in outcomes)
    assert [o.task_id for o in outcomes] == [t.id for t in tasks]
    assert [o.ok for o in outcomes] == [True, False, True]
    assert [o.task for o in outcomes] == [None, None, None]
    assert outcomes[1].error is not None and outcomes[1].error.code == "LEASE_LOST"
    assert (await surface.get_task(tasks[0].id)).result == {"ok": True}
    assert (await surface.get_task(tasks[1].id)).status is TaskStatus.IN_PROGRESS


async def test_the_event_history_records_every_status_change(surface: Surface) -> None:
    kind = unique("history")
    job = await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[NewTask(max_attempts=2)])]
    )
    task = await surface.dequeue(kind, worker="w-7")
    assert task is not None
    await surface.fail(task.id, lease_id=task.lease_id, reason="flaky")
    again = await surface.dequeue(kind)
    assert again is not None
    await surface.complete(again.id, lease_id=again.lease_id)

    page = await surface.list_events(job.id, page_size=100)
    events = page.items
    assert page.total == len(events)
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert all(e.job_id == job.id for e in events)
    moves = {
        entity: [(e.from_status, e.to_status) for e in events if e.entity == entity]
        for entity in ("JOB", "STAGE", "TASK")
    }
    assert moves == {
        "JOB": [(None, "PENDING"), ("PENDING", "IN_PROGRESS"), ("IN_PROGRESS", "COMPLETED")],
        "STAGE": [(None, "PENDING"), ("PENDING", "IN_PROGRESS"), ("IN_PROGRESS", "COMPLETED")],
        "TASK": [
            (None, "PENDING"),
            ("PENDING", "IN_PROGRESS"),
            ("IN_PROGRESS", "RETRIED"),
            ("RETRIED", "IN_PROGRESS"),
            ("IN_PROGRESS", "COMPLETED"),
        ],
    }
    failure = next(e for e in events if e.to_status == "RETRIED")
    assert (failure.task_id, failure.attempt, failure.reason) == (task.id, 1, "flaky")
    assert (failure.lease_id, failure.worker) == (task.lease_id, "w-7")
    assert failure.stage_id == task.stage_id and failure.entity_id == task.id

    walked = [e.id async for e in surface.iter_events(job.id, page_size=3)]
    assert walked == [e.id for e in events]
    second = await surface.list_events(job.id, page=2, page_size=3)
    assert [e.id for e in second.items] == [e.id for e in events[3:6]]


async def test_a_create_repeated_with_its_idempotency_key_creates_nothing_new(
    surface: Surface,
) -> None:
    name, key = unique("job"), unique("key")
    stages = [NewStage(type=unique("k"), tasks=[NewTask(data={"n": 1})])]
    first = await surface.create_job(name, {"a": 1}, stages=stages, idempotency_key=key)
    repeat = await surface.create_job(name, {"a": 1}, stages=stages, idempotency_key=key)
    assert repeat.id == first.id and repeat.stages is not None
    assert (await surface.list_jobs(name=name)).total == 1
    with pytest.raises(ConflictError) as reused:
        await surface.create_job(name, {"a": 2}, stages=stages, idempotency_key=key)
    assert (reused.value.status_code, reused.value.code) == (409, "IDEMPOTENCY_KEY_REUSED")
    assert not isinstance(reused.value, LeaseLostError)

    stage_key, tasks_key = unique("stage"), unique("tasks")
    stage = await surface.add_stage(first.id, unique("k2"), idempotency_key=stage_key)
    assert (await surface.add_stage(first.id, stage.type, idempotency_key=stage_key)).id == stage.id
    tasks = [NewTask(data={"i": i}) for i in range(2)]
    added = await surface.add_tasks(stage.id, tasks, idempotency_key=tasks_key)
    again = await surface.add_tasks(stage.id, tasks, idempotency_key=tasks_key)
    assert [t.id for t in again] == [t.id for t in added]
    assert (await surface.get_summary(stage.id)).total == 2
    with pytest.raises(ConflictError):
        await surface.add_tasks(stage.id, tasks[:1], idempotency_key=tasks_key)


# ---- the report and policy types themselves (no manager) --------------------------------


def test_a_report_carries_only_what_its_status_takes() -> None:
    task_id, lease_id = uuid.uuid4(), uuid.uuid4()
    assert TaskReport.completed(task_id).body() == {"status": "COMPLETED"}
    assert TaskReport.failed(task_id, lease_id=lease_id, reason="x", retryable=False).body() == {
        "status": "FAILED",
        "leaseId": str(lease_id),
        "reason": "x",
        "retryable": False,
    }
    later = TaskReport.retry_later(task_id, delay=timedelta(seconds=1.5))
    assert later.body() == {"status": "RETRIED", "retryAfterSeconds": 1.5}
    assert (
        TaskReport.retry_later(task_id, delay=timedelta(minutes=1)).body()["retryAfterSeconds"]
        == 60
    )
    with pytest.raises(ValueError):
        TaskReport(task_id=task_id, status=TaskStatus.COMPLETED, reason="no")
    with pytest.raises(ValueError):
        TaskReport(task_id=task_id, status=TaskStatus.RETRIED)  # needs retry_after
    with pytest.raises(ValueError):
        TaskReport(task_id=task_id, status=TaskStatus.PENDING)
    with pytest.raises(ValueError):
        TaskReport.failed(task_id, reason="x" * 2001)


def test_retry_delays_grow_to_their_cap_and_are_bounded() -> None:
    policy = TaskRetryPolicy(initial_delay=timedelta(seconds=5), max_delay=timedelta(seconds=30))
    assert [policy.delay_after(n).total_seconds() for n in range(5)] == [0, 5, 10, 20, 30]
    assert TaskRetryPolicy.model_validate({"initialDelaySeconds": 2}).max_delay == timedelta(
        hours=1
    )
    with pytest.raises(ValueError):
        TaskRetryPolicy(initial_delay=timedelta(minutes=2), max_delay=timedelta(minutes=1))
    with pytest.raises(ValueError):
        TaskRetryPolicy(initial_delay=timedelta(seconds=1), multiplier=0.5)
    with pytest.raises(ValueError):
        RetryLaterError(timedelta(seconds=-1))
    with pytest.raises(ValueError):
        RetryLaterError(timedelta(days=8))
