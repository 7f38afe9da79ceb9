"""The Worker's batched traffic, on the FakeJobnik: one read of the job and the stage
for tasks that start together, a long poll that brings work to an idle worker, reports
that cannot get through, and managers that know neither long polls nor batch
heartbeats."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from jobnik_sdk import (
    ApiError,
    Backoff,
    ClaimedTasks,
    Job,
    JobnikTransportError,
    JobnikValidationError,
    JobStatus,
    NewStage,
    NewTask,
    Stage,
    Task,
    TaskContext,
    TaskStatus,
)
from jobnik_sdk._worker import NOT_STARTED_REASON
from jobnik_sdk.testing import FakeJobnik

from ..support.handlers import Gate, Held
from ..support.workers import worker

DEADLINE = timedelta(seconds=10)
GLACIAL = Backoff(initial=timedelta(seconds=30), maximum=timedelta(seconds=60), jitter=0)


class CountingFake(FakeJobnik):
    """Counts the calls a worker makes, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.claim_waits: list[timedelta | None] = []
        self.claiming = asyncio.Event()

    def _claiming(self, options: dict[str, Any]) -> None:
        self.calls["claim"] += 1
        self.claim_waits.append(options.get("wait"))
        self.claiming.set()

    async def claim(self, stage_types: Any, **options: Any) -> list[Task]:
        self._claiming(options)
        return await super().claim(stage_types, **options)

    async def claim_with_context(self, stage_types: Any, **options: Any) -> ClaimedTasks:
        self._claiming(options)
        return await super().claim_with_context(stage_types, **options)

    async def get_stage(self, stage_id: Any, **options: Any) -> Stage:
        self.calls["get_stage"] += 1
        await asyncio.sleep(0.01)  # a read takes a while, so concurrent ones overlap
        return await super().get_stage(stage_id, **options)

    async def get_job(self, job_id: Any, **options: Any) -> Job:
        self.calls["get_job"] += 1
        await asyncio.sleep(0.01)
        return await super().get_job(job_id, **options)


async def one_stage_job(fake: FakeJobnik, kind: str, count: int = 1) -> Any:
    tasks = [NewTask(data={"n": n}) for n in range(count)]
    return await fake.create_job("job", stages=[NewStage(type=kind, tasks=tasks)])


class NoContextFake(CountingFake):
    """A manager that answers claims without their tasks' jobs and stages."""

    async def claim_with_context(self, stage_types: Any, **options: Any) -> Any:
        self.calls["claim_with_context"] += 1
        raise JobnikValidationError(
            "withContext: Extra inputs are not permitted",
            status_code=400,
            code="VALIDATION_ERROR",
        )


async def test_claims_bring_the_job_and_stage_so_none_is_read() -> None:
    fake, count = CountingFake(), 16

    seen: list[tuple[Any, str]] = []
    all_seen = asyncio.Event()

    async def note(data: dict[str, Any], ctx: TaskContext) -> None:
        seen.append((ctx.job.id, ctx.stage.type))
        if len(seen) == count:
            all_seen.set()

    job = await one_stage_job(fake, "context", count)
    async with worker(fake, "context", note, concurrency=4):
        await asyncio.wait_for(all_seen.wait(), DEADLINE.total_seconds())
    assert seen == [(job.id, "context")] * count
    assert (fake.calls["get_stage"], fake.calls["get_job"]) == (0, 0)
    done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED


async def test_tasks_that_start_together_share_one_read_of_their_job_and_stage() -> None:
    fake, count = NoContextFake(), 16
    hold = Gate(count)
    job = await one_stage_job(fake, "together", count)
    async with worker(fake, "together", hold, concurrency=count):
        await asyncio.wait_for(hold.all_running.wait(), DEADLINE.total_seconds())
        reads = (fake.calls["get_stage"], fake.calls["get_job"])
        hold.release.set()
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert reads == (1, 1)
    assert fake.calls["claim_with_context"] == 1, "refused once, then plain claims"


async def test_an_idle_worker_gets_work_through_the_claim_it_holds() -> None:
    fake = CountingFake()
    started = asyncio.Event()
    brought: list[tuple[timedelta | None, int]] = []  # each claim's wait, and its tasks

    async def claim(stage_types: Any, **options: Any) -> ClaimedTasks:
        claimed = await CountingFake.claim_with_context(fake, stage_types, **options)
        brought.append((options.get("wait"), len(claimed.items)))
        return claimed

    fake.claim_with_context = claim  # type: ignore[method-assign]

    async def note(data: dict[str, Any], ctx: TaskContext) -> None:
        started.set()

    async with worker(fake, "idle", note, poll_backoff=GLACIAL, claim_wait=timedelta(seconds=5)):
        async with asyncio.timeout(DEADLINE.total_seconds()):
            while len(fake.claim_waits) < 2:  # a plain claim, then one that waits
                fake.claiming.clear()
                await fake.claiming.wait()
            job = await one_stage_job(fake, "idle")
            await started.wait()
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    # A plain claim found nothing; the waiting one brought the task (what the worker
    # asks for after it, to keep its slots full, is not this test's).
    assert brought[:2] == [(None, 0), (timedelta(seconds=5), 1)]


class SlowAnswers(CountingFake):
    """A claim's answer takes a while to come back once its tasks are claimed, as an
    answer on its way over the network does."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed = asyncio.Event()

    async def claim_with_context(self, stage_types: Any, **options: Any) -> ClaimedTasks:
        claimed = await super().claim_with_context(stage_types, **options)
        if claimed.items:
            self.claimed.set()
            await asyncio.sleep(0.2)
        return claimed


@pytest.mark.parametrize("claim", ["plain", "waiting"])
async def test_a_worker_stopped_as_its_claim_is_answered_hands_back_what_it_claimed(
    claim: str,
) -> None:
    fake = SlowAnswers()
    ran: list[Any] = []

    async def note(data: dict[str, Any], ctx: TaskContext) -> None:
        ran.append(ctx.task.id)

    if claim == "plain":
        await one_stage_job(fake, "late")  # ready for the first claim, which does not wait
    w = worker(fake, "late", note, poll_backoff=GLACIAL)
    run = asyncio.create_task(w.run())
    async with asyncio.timeout(DEADLINE.total_seconds()):
        if claim == "waiting":
            while len(fake.claim_waits) < 2:
                fake.claiming.clear()
                await fake.claiming.wait()
            await one_stage_job(fake, "late")
        await fake.claimed.wait()
        await w.shutdown()  # while the answer is on its way
    assert run.done() and run.exception() is None
    assert fake.claim_waits[-1] == (timedelta(seconds=30) if claim == "waiting" else None)
    # Not left to its lease: offered again at once, with no attempt spent.
    [task] = (await fake.list_tasks(stage_type="late")).items
    assert (task.status, task.attempts, task.reason, ran) == (
        TaskStatus.RETRIED,
        0,
        NOT_STARTED_REASON,
        [],
    )
    assert task.not_before is None


class ReportsUnreachable(FakeJobnik):
    """The manager is out of reach for reports, and only for them."""

    def __init__(self) -> None:
        super().__init__()
        self.tries = 0

    async def report_many(self, reports: Any, **options: Any) -> Any:
        self.tries += 1
        raise JobnikTransportError("manager unreachable")


async def test_a_report_that_cannot_get_through_is_given_up_not_turned_into_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = ReportsUnreachable()
    ran = asyncio.Event()

    async def ok(data: dict[str, Any], ctx: TaskContext) -> None:
        ran.set()

    await one_stage_job(fake, "unreported")
    quick = Backoff(initial=timedelta(milliseconds=5), maximum=timedelta(milliseconds=20))
    async with asyncio.timeout(DEADLINE.total_seconds()):
        timeout = timedelta(milliseconds=200)
        async with worker(fake, "unreported", ok, poll_backoff=quick, report_timeout=timeout):
            await ran.wait()
    # Sent again until the report timeout ran out, then given up; the task keeps its
    # lease (to run out on the manager), and no failed attempt is made of it.
    assert fake.tries >= 2
    [task] = (await fake.list_tasks(stage_type="unreported")).items
    assert f"giving up reporting unreported task {task.id}" in caplog.text
    assert (task.status, task.attempts) == (TaskStatus.IN_PROGRESS, 0)


class WithoutLongPolls(NoContextFake):
    """A manager from before long polls: `waitSeconds` (and `withContext`) are unknown
    fields to it."""

    async def claim(self, stage_types: Any, **options: Any) -> list[Task]:
        if options.get("wait") is not None:
            self.calls["refused"] += 1
            raise JobnikValidationError(
                "waitSeconds: Extra inputs are not permitted",
                status_code=400,
                code="VALIDATION_ERROR",
            )
        return await super().claim(stage_types, **options)


async def test_against_a_manager_without_long_polls_the_worker_polls() -> None:
    fake = WithoutLongPolls()

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    quick = Backoff(initial=timedelta(milliseconds=5), maximum=timedelta(milliseconds=20))
    async with worker(fake, "old", noop, poll_backoff=quick):
        for _ in range(2):
            job = await one_stage_job(fake, "old", 3)
            done = await fake.wait(job.id, timeout=DEADLINE)
            assert done.status is JobStatus.COMPLETED
    assert fake.calls["refused"] == 1, "asked once, then polled"
    assert fake.calls["claim"] > 2


class WithoutBriefReports(FakeJobnik):
    """A manager from before brief batch reports: `withTasks` is an unknown field to it,
    and it refuses the whole batch, settling none of it."""

    def __init__(self) -> None:
        super().__init__()
        self.brief = self.whole = 0

    async def report_many(self, reports: Any, *, with_tasks: bool = True) -> Any:
        if not with_tasks:
            self.brief += 1
            raise JobnikValidationError(
                "withTasks: Extra inputs are not permitted",
                status_code=400,
                code="VALIDATION_ERROR",
            )
        self.whole += 1
        return await super().report_many(reports, with_tasks=True)


async def test_against_a_manager_without_brief_reports_the_tasks_are_reported_whole() -> None:
    fake = WithoutBriefReports()

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    async with worker(fake, "whole", noop, concurrency=4):
        for _ in range(2):
            job = await one_stage_job(fake, "whole", 5)
            done = await fake.wait(job.id, timeout=DEADLINE)
            assert done.status is JobStatus.COMPLETED
    assert fake.brief == 1, "asked once, then reported whole"
    assert fake.whole >= 2
    tasks = (await fake.list_tasks(stage_type="whole")).items
    assert [(t.status, t.attempts) for t in tasks] == [(TaskStatus.COMPLETED, 0)] * 10


class WithoutBatchHeartbeats(FakeJobnik):
    """A manager from before batch heartbeats: the route is not there."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_beats = self.single_beats = 0

    async def heartbeat_many(self, heartbeats: Any, **options: Any) -> Any:
        self.batch_beats += 1
        raise ApiError("Method Not Allowed", status_code=405, code="METHOD_NOT_ALLOWED")

    async def heartbeat(self, task_id: Any, lease_id: Any, **options: Any) -> Any:
        self.single_beats += 1
        return await super().heartbeat(task_id, lease_id, **options)


async def test_against_a_manager_without_batch_heartbeats_leases_are_kept_one_by_one() -> None:
    fake = WithoutBatchHeartbeats()
    long = Held()
    job = await one_stage_job(fake, "beats", 2)
    interval = timedelta(milliseconds=50)
    async with worker(fake, "beats", long, concurrency=2, heartbeat_interval=interval):
        await asyncio.wait_for(long.started.wait(), DEADLINE.total_seconds())
        await fake.abort(job.id)
        await asyncio.wait_for(long.cancelled.wait(), DEADLINE.total_seconds())
    assert fake.batch_beats == 1
    assert fake.single_beats >= 2
    tasks = (await fake.list_tasks(stage_type="beats")).items
    assert [t.status for t in tasks] == [TaskStatus.ABORTED] * 2
