"""The Worker: what it reports for each handler outcome, concurrency, polling, and
shutdown without losing claimed tasks. Mostly on the FakeJobnik; the last tests run it
against the manager in-process."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import time
from datetime import timedelta
from itertools import pairwise
from typing import Any

import pytest
from pydantic import BaseModel

from jobnik_sdk import (
    Backoff,
    ClaimedTasks,
    JobnikClient,
    JobnikTransportError,
    JobStatus,
    NewStage,
    NewTask,
    NonRetryableError,
    Priority,
    ReportOutcome,
    Task,
    TaskContext,
    TaskStatus,
    Worker,
)
from jobnik_sdk._attempt import SHUTDOWN_REASON
from jobnik_sdk.testing import FakeJobnik

from ..support.api import unique
from ..support.handlers import Held
from ..support.workers import worker

DEADLINE = timedelta(seconds=10)


class Tile(BaseModel):
    x: int
    y: int


async def one_stage_job(
    client: Any, kind: str, *tasks: NewTask, start_as_waiting: bool = False
) -> Any:
    return await client.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=list(tasks), start_as_waiting=start_as_waiting)],
    )


async def test_a_returning_handler_completes_tasks_with_validated_data() -> None:
    fake = FakeJobnik()
    seen: list[tuple[Tile, str, str, int]] = []

    async def render(tile: Tile, ctx: TaskContext) -> None:
        seen.append((tile, ctx.stage.type, ctx.job.name, ctx.attempt))

    job = await one_stage_job(fake, "tiles", NewTask(data={"x": 1, "y": 2}))
    async with worker(fake, "tiles", render):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert seen == [(Tile(x=1, y=2), "tiles", job.name, 1)]


async def test_a_raising_handler_fails_the_attempt_and_the_manager_retries() -> None:
    fake = FakeJobnik()
    attempts: list[int] = []

    async def flaky(data: dict[str, Any], ctx: TaskContext) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")

    job = await one_stage_job(fake, "flaky", NewTask(data={"n": 1}, max_attempts=2))
    async with worker(fake, "flaky", flaky):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert attempts == [1, 2]
    [task] = (await fake.list_tasks(stage_type="flaky")).items
    assert (task.status, task.attempts) == (TaskStatus.COMPLETED, 1)


async def test_non_retryable_error_fails_the_task_at_once_with_its_message() -> None:
    fake = FakeJobnik()
    calls = 0

    async def refuse(data: dict[str, Any], ctx: TaskContext) -> None:
        nonlocal calls
        calls += 1
        raise NonRetryableError("bad input")

    job = await one_stage_job(fake, "refuse", NewTask(max_attempts=3))
    async with worker(fake, "refuse", refuse):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.FAILED
    assert calls == 1
    [task] = (await fake.list_tasks(stage_type="refuse")).items
    assert (task.status, task.attempts, task.reason) == (TaskStatus.FAILED, 1, "bad input")


async def test_data_that_does_not_validate_fails_without_calling_the_handler() -> None:
    fake = FakeJobnik()
    called = False

    async def render(tile: Tile, ctx: TaskContext) -> None:
        nonlocal called
        called = True

    job = await one_stage_job(fake, "tiles", NewTask(data={"x": "not a number"}, max_attempts=3))
    async with worker(fake, "tiles", render):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.FAILED
    assert not called
    [task] = (await fake.list_tasks(stage_type="tiles")).items
    assert task.attempts == 1
    assert task.reason is not None and task.reason.startswith("task data is not a valid Tile")


async def test_data_model_option_and_whole_task_annotation() -> None:
    fake = FakeJobnik()
    got: list[Any] = []

    async def by_option(data, ctx):  # type: ignore[no-untyped-def]
        got.append(data)

    async def whole(task: Task, ctx: TaskContext) -> None:
        got.append(task)

    job = await one_stage_job(fake, "a", NewTask(data={"x": 1, "y": 1}))
    async with worker(fake, "a", by_option, data_model=Tile):
        await fake.wait(job.id, timeout=DEADLINE)
    job = await one_stage_job(fake, "b", NewTask(data={"k": "v"}))
    async with worker(fake, "b", whole):
        await fake.wait(job.id, timeout=DEADLINE)
    assert got[0] == Tile(x=1, y=1)
    assert isinstance(got[1], Task) and got[1].data == {"k": "v"}


async def test_context_helpers_write_task_user_metadata() -> None:
    fake = FakeJobnik()

    async def report_progress(data: dict[str, Any], ctx: TaskContext) -> None:
        await ctx.update_progress(50, phase="half")
        await ctx.update_progress(100)
        ctx.logger.info("done")

    job = await one_stage_job(fake, "p", NewTask(user_metadata={"owner": "me"}))
    async with worker(fake, "p", report_progress):
        await fake.wait(job.id, timeout=DEADLINE)
    [task] = (await fake.list_tasks(stage_type="p")).items
    assert task.user_metadata == {"owner": "me", "progress": 100, "phase": "half"}


async def test_progress_recorded_just_before_returning_does_not_hold_up_the_worker() -> None:
    # The heartbeat loop wakes for the progress as the handler ends; it must still stop.
    fake = FakeJobnik()

    async def quick(data: dict[str, Any], ctx: TaskContext) -> None:
        await asyncio.sleep(0.05)  # the heartbeat loop is waiting by then
        await ctx.update_progress(100)

    job = await one_stage_job(fake, "quick", *[NewTask() for _ in range(12)])
    async with asyncio.timeout(DEADLINE.total_seconds()):
        async with worker(fake, "quick", quick, concurrency=4):
            done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED


async def test_concurrency_bounds_tasks_in_flight() -> None:
    fake = FakeJobnik()
    running = peak = 0

    async def slow(data: dict[str, Any], ctx: TaskContext) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1

    job = await one_stage_job(fake, "slow", *[NewTask() for _ in range(9)])
    async with worker(fake, "slow", slow, concurrency=3):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert peak == 3


class CountingFake(FakeJobnik):
    def __init__(self) -> None:
        super().__init__()
        self.claims: list[float] = []
        self.limits: list[int] = []

    async def claim_with_context(self, stage_types: Any, **options: Any) -> ClaimedTasks:
        self.claims.append(time.monotonic())
        self.limits.append(options["limit"])
        return await super().claim_with_context(stage_types, **options)


async def test_a_worker_idle_for_thousands_of_polls_stays_up() -> None:
    fake = CountingFake()
    polled = asyncio.Event()
    # Past 1,024 empty polls, where the backoff's step once overflowed; delays far below
    # a second, so the rounds pass quickly; their steps still grow.
    tiny = Backoff(initial=timedelta(microseconds=1), maximum=timedelta(microseconds=50))

    async def count(stage_types: Any, **options: Any) -> ClaimedTasks:
        claimed = await CountingFake.claim_with_context(fake, stage_types, **options)
        if len(fake.claims) >= 1_100:
            polled.set()
        return claimed

    fake.claim_with_context = count  # type: ignore[method-assign]

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    w = worker(fake, "idle", noop, poll_backoff=tiny, claim_wait=timedelta(0))
    run = asyncio.create_task(w.run())
    await asyncio.wait_for(polled.wait(), 60)
    assert not run.done(), "still polling"
    job = await one_stage_job(fake, "idle", NewTask())
    done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED, "and still runs what comes"
    await w.shutdown()
    assert run.exception() is None


async def test_a_busy_worker_claims_again_at_once_and_an_idle_one_backs_off() -> None:
    fake = CountingFake()
    # In order: ("claim", tasks it brought) and ("pause", idle step) as the worker asks
    # its poll backoff for a delay.
    events: list[tuple[str, int]] = []
    paused_thrice = asyncio.Event()

    class Recorded(Backoff):
        def delay(self, step: int, *, rng: random.Random | None = None) -> timedelta:
            events.append(("pause", step))
            return super().delay(step, rng=rng)

    async def claim(stage_types: Any, **options: Any) -> ClaimedTasks:
        claimed = await CountingFake.claim_with_context(fake, stage_types, **options)
        events.append(("claim", len(claimed.items)))
        if sum(kind == "pause" for kind, _ in events) >= 3:
            paused_thrice.set()
        return claimed

    fake.claim_with_context = claim  # type: ignore[method-assign]

    async def quick(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    job = await one_stage_job(fake, "q", *[NewTask() for _ in range(20)])
    poll = Recorded(initial=timedelta(milliseconds=5), maximum=timedelta(milliseconds=20))
    # Plain polling: without long polls, an idle worker paces its claims by the backoff.
    async with worker(fake, "q", quick, poll_backoff=poll, claim_wait=timedelta(0)):
        await fake.wait(job.id, poll_interval=timedelta(milliseconds=5), timeout=DEADLINE)
        await asyncio.wait_for(paused_thrice.wait(), DEADLINE.total_seconds())
    pauses = [i for i, (kind, _) in enumerate(events) if kind == "pause"]
    # Busy: every task was claimed before the worker first paused.
    assert sum(n for kind, n in events[: pauses[0]] if kind == "claim") == 20
    # Idle: one empty claim per pause, each pause longer than the one before (by a step,
    # or by two where a claim sent ahead while the worker was busy came back empty too).
    assert all(events[a + 1 : b] == [("claim", 0)] for a, b in pairwise(pauses))
    steps = [events[i][1] for i in pauses]
    assert all(0 < later - earlier <= 2 for earlier, later in pairwise(steps)), steps


async def test_several_stage_types_are_served_in_the_managers_order() -> None:
    fake = CountingFake()
    served: list[str] = []

    async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
        served.append(ctx.stage.type)

    first = await one_stage_job(fake, "a", NewTask(), NewTask())
    second = await one_stage_job(fake, "b", NewTask(), NewTask())
    await fake.set_priority(second.id, Priority.HIGH)
    async with worker(fake, ["a", "b"], handle):
        await fake.wait(first.id, timeout=DEADLINE)
        await fake.wait(second.id, timeout=DEADLINE)
    # One claim covers both types, so job priority (then age) decides across them.
    assert served == ["b", "b", "a", "a"]


async def test_free_slots_are_claimed_in_one_batch() -> None:
    fake = CountingFake()
    running, all_running, release = 0, asyncio.Event(), asyncio.Event()

    async def wait(data: dict[str, Any], ctx: TaskContext) -> None:
        nonlocal running
        running += 1
        if running == 4:
            all_running.set()
        await release.wait()

    job = await one_stage_job(fake, "batch", *[NewTask() for _ in range(5)])
    async with worker(fake, "batch", wait, concurrency=4, prefetch=0):
        await asyncio.wait_for(all_running.wait(), 5)
        release.set()
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert fake.limits[0] == 4, "the first claim asks for every free slot"
    assert max(fake.limits) <= 4, "without prefetch, never more than the free slots"


async def test_short_tasks_are_claimed_ahead_of_the_free_slots() -> None:
    fake = CountingFake()
    handled: list[int] = []

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        handled.append(data["n"])

    job = await one_stage_job(fake, "ahead", *[NewTask(data={"n": n}) for n in range(300)])
    async with worker(fake, "ahead", noop, concurrency=4):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert sorted(handled) == list(range(300)), "each task ran once"
    assert fake.limits[0] == 4, "nothing is claimed ahead before a handler has run"
    assert max(fake.limits) > 4, "once handlers are seen to be short, claims run ahead"


class UnreliableFake(FakeJobnik):
    """Claims and reports fail a few times with JobnikTransportError before working."""

    def __init__(self, claim_failures: int, report_failures: int) -> None:
        super().__init__()
        self.claim_failures, self.report_failures = claim_failures, report_failures

    async def claim_with_context(self, stage_types: Any, **options: Any) -> ClaimedTasks:
        if self.claim_failures:
            self.claim_failures -= 1
            raise JobnikTransportError("manager unreachable")
        return await super().claim_with_context(stage_types, **options)

    async def report_many(self, reports: Any, **options: Any) -> list[ReportOutcome]:
        if self.report_failures:
            self.report_failures -= 1
            raise JobnikTransportError("manager unreachable")
        return await super().report_many(reports, **options)


async def test_claim_and_report_failures_are_survived() -> None:
    fake = UnreliableFake(claim_failures=3, report_failures=2)

    async def ok(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    job = await one_stage_job(fake, "u", NewTask())
    async with worker(fake, "u", ok):
        done = await fake.wait(job.id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert (fake.claim_failures, fake.report_failures) == (0, 0)


async def test_shutdown_lets_running_tasks_finish_and_report() -> None:
    fake = FakeJobnik()
    started = asyncio.Event()

    async def slow(data: dict[str, Any], ctx: TaskContext) -> None:
        started.set()
        await asyncio.sleep(0.3)

    job = await one_stage_job(fake, "s", NewTask(), NewTask())
    w = worker(fake, "s", slow, shutdown_grace=timedelta(seconds=5))
    run = asyncio.create_task(w.run())
    await asyncio.wait_for(started.wait(), 5)
    await w.shutdown()
    assert run.done() and run.exception() is None
    await w.shutdown()  # idempotent
    tasks = (await fake.list_tasks(stage_type="s")).items
    assert sorted(t.status for t in tasks) == [TaskStatus.COMPLETED, TaskStatus.PENDING]
    assert (await fake.get_job(job.id)).status is JobStatus.IN_PROGRESS


async def test_tasks_still_running_after_the_grace_period_are_cancelled_and_handed_back() -> None:
    fake, stuck = FakeJobnik(), Held()
    await one_stage_job(fake, "stuck", NewTask(max_attempts=1))  # its last attempt
    w = worker(fake, "stuck", stuck, shutdown_grace=timedelta(milliseconds=100))
    run = asyncio.create_task(w.run())
    await asyncio.wait_for(stuck.started.wait(), 5)
    # Returns only by cancelling the handler once the grace period is over.
    await asyncio.wait_for(w.shutdown(), DEADLINE.total_seconds())
    assert stuck.cancelled.is_set() and run.done()
    [task] = (await fake.list_tasks(stage_type="stuck")).items
    # Offered again at once, with its attempt unspent: a restart is not the task's fault.
    assert (task.status, task.attempts, task.not_before) == (TaskStatus.RETRIED, 0, None)
    assert task.reason == SHUTDOWN_REASON


async def test_cancelling_run_still_reports_claimed_tasks() -> None:
    fake, stuck = FakeJobnik(), Held()
    await one_stage_job(fake, "c", NewTask(max_attempts=3))
    run = asyncio.create_task(worker(fake, "c", stuck).run())
    await asyncio.wait_for(stuck.started.wait(), 5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    [task] = (await fake.list_tasks(stage_type="c")).items
    assert task.status is TaskStatus.RETRIED


async def test_shutdown_before_run_and_run_twice() -> None:
    fake = FakeJobnik()

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    w = worker(fake, "n", noop)
    await w.shutdown()
    await asyncio.wait_for(w.run(), 5)  # already asked to stop: returns at once
    with pytest.raises(RuntimeError):
        await w.run()


async def test_a_worker_given_a_url_owns_and_closes_its_client() -> None:
    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    w = worker("http://127.0.0.1:9", "n", noop)
    client = w._client
    assert isinstance(client, JobnikClient)
    await w.shutdown()
    await w.run()
    with pytest.raises(RuntimeError):
        await client.get_job("x")  # closed


def test_options_are_checked() -> None:
    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    fake = FakeJobnik()
    with pytest.raises(ValueError):
        Worker(fake, stage_types=[], handler=noop)
    with pytest.raises(ValueError):
        Worker(fake, stage_types="t", handler=noop, concurrency=0)
    with pytest.raises(ValueError):
        Worker(fake, stage_types="t", handler=noop, lease=timedelta(milliseconds=500))
    with pytest.raises(ValueError):
        Worker(
            fake,
            stage_types="t",
            handler=noop,
            lease=timedelta(seconds=10),
            heartbeat_interval=timedelta(seconds=10),
        )
    with pytest.raises(ValueError):
        Worker(fake, stage_types="t", handler=noop, heartbeat_interval=timedelta(0))
    with pytest.raises(ValueError):
        Worker(fake, stage_types="t", handler=noop, name="")
    assert (
        Worker(fake, stage_types="t", handler=noop).name == f"{socket.gethostname()}-{os.getpid()}"
    )

    async def one_argument(data: dict[str, Any]) -> None:
        return None

    with pytest.raises(TypeError):
        Worker(fake, stage_types="t", handler=one_argument)  # type: ignore[arg-type]


async def test_sigterm_starts_a_graceful_shutdown() -> None:
    fake = FakeJobnik()
    started = asyncio.Event()
    finished = False

    async def slow(data: dict[str, Any], ctx: TaskContext) -> None:
        nonlocal finished
        started.set()
        await asyncio.sleep(0.2)
        finished = True

    await one_stage_job(fake, "sig", NewTask())
    w = worker(fake, "sig", slow, handle_signals=True)
    run = asyncio.create_task(w.run())
    await asyncio.wait_for(started.wait(), 5)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(run, 5)
    assert finished
    [task] = (await fake.list_tasks(stage_type="sig")).items
    assert task.status is TaskStatus.COMPLETED
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


async def test_workers_of_one_process_share_the_signals() -> None:
    """A worker that stops first leaves the others listening; one SIGTERM then stops all
    of them, and the last to return gives back the handlers that were there before."""
    fake = FakeJobnik()
    sigint_before = signal.getsignal(signal.SIGINT)

    async def idle(data: dict[str, Any], ctx: TaskContext) -> None:
        pass

    workers = [worker(fake, unique("sig"), idle, handle_signals=True) for _ in range(3)]
    runs = [asyncio.create_task(w.run()) for w in workers]
    await asyncio.sleep(0.05)
    # The one that started last: before, its stop took the handlers from the others.
    await asyncio.wait_for(workers[-1].shutdown(), 5)
    assert not any(run.done() for run in runs[:-1])
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(asyncio.gather(*runs), 5)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is sigint_before


# ---- against the manager ----------------------------------------------------------------


async def test_worker_runs_a_job_on_the_manager(jobnik: JobnikClient) -> None:
    prepare, render = unique("prepare"), unique("render")
    job = await jobnik.create_job(
        unique("job"),
        stages=[
            NewStage(type=prepare, tasks=[NewTask(data={"x": 0, "y": 0})]),
            NewStage(
                type=render,
                tasks=[NewTask(data={"x": i, "y": i}, max_attempts=2) for i in range(4)],
            ),
        ],
    )
    failed_once: set[int] = set()

    async def handle(tile: Tile, ctx: TaskContext) -> None:
        await ctx.update_progress(10)
        if ctx.stage.type == render and tile.x == 2 and tile.x not in failed_once:
            failed_once.add(tile.x)
            raise RuntimeError("flaky")

    async with worker(jobnik, [prepare, render], handle, concurrency=2):
        done = await jobnik.wait(job.id, poll_interval=timedelta(milliseconds=20), timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    stages = await jobnik.get_job_stages(job.id, with_tasks=True)
    assert [(s.summary.completed, s.summary.total) for s in stages] == [(1, 1), (4, 4)]
    assert stages[1].tasks is not None
    assert sorted(t.attempts for t in stages[1].tasks) == [0, 0, 0, 1]
    assert all(t.user_metadata == {"progress": 10} for t in stages[1].tasks)


async def test_worker_reports_failures_to_the_manager(jobnik: JobnikClient) -> None:
    kind = unique("refuse")

    async def refuse(data: dict[str, Any], ctx: TaskContext) -> None:
        raise NonRetryableError("no")

    job = await one_stage_job(jobnik, kind, NewTask(max_attempts=3))
    async with worker(jobnik, kind, refuse):
        done = await jobnik.wait(job.id, poll_interval=timedelta(milliseconds=20), timeout=DEADLINE)
    assert done.status is JobStatus.FAILED
    [task] = (await jobnik.list_tasks(stage_type=kind)).items
    assert (task.status, task.attempts, task.reason) == (TaskStatus.FAILED, 1, "no")
