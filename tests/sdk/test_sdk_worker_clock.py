"""The Worker on a clock the test moves: leases kept by heartbeats, and lost without
them, over seconds of the worker's and the fake manager's time, with no sleeping."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from jobnik_sdk import HeartbeatOutcome, TaskContext, TaskHeartbeat, TaskStatus, Worker
from jobnik_sdk.testing import FakeClock, FakeJobnik, FakeManager

from ..support.api import unique
from ..support.clients import PassThrough
from .conftest import QUICK
from .test_sdk_worker_leases import eventually, in_status, one_task


class ManualClock:
    """A Worker clock that moves only on `advance`, and moves the fake manager's with it."""

    def __init__(self, manager: FakeClock) -> None:
        self._now = 0.0
        self._manager = manager
        self._sleepers: list[tuple[float, asyncio.Future[None], int]] = []
        self.sleeps = 0  # how many sleeps began, to tell the newer ones apart

    def monotonic(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        self.sleeps += 1
        entry = (self._now + seconds, asyncio.get_running_loop().create_future(), self.sleeps)
        self._sleepers.append(entry)
        try:
            await entry[1]
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    def asleep_until(self, due: float, *, since: int) -> bool:
        """Whether a sleep begun after the `since`-th sleeps until `due` (the lease
        keeper's, for its next beat; the one that bounded the last beat's wait for an
        answer may not have been cancelled yet, and was begun before it)."""
        return any(at == due and n > since and not w.done() for at, w, n in self._sleepers)

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._manager.advance(seconds)
        for due, woken, _ in list(self._sleepers):
            if due <= self._now and not woken.done():
                woken.set_result(None)

    async def run(self) -> None:
        """Let time pass, 50 ms of it every 10 ms, until cancelled."""
        while True:
            await asyncio.sleep(0.01)
            self.advance(0.05)


class Beats(PassThrough):
    """Passes every call to the fake, counting the batch heartbeats it answered."""

    def __init__(self, inner: FakeJobnik, clock: ManualClock) -> None:
        super().__init__(inner)
        self.answered = 0
        self.answered_after_sleeps = 0
        self._clock = clock

    async def heartbeat_many(
        self, heartbeats: list[TaskHeartbeat], **options: Any
    ) -> list[HeartbeatOutcome]:
        answers = await self.inner.heartbeat_many(heartbeats, **options)
        self.answered += 1
        self.answered_after_sleeps = self._clock.sleeps
        return answers


async def run_held_task(advances: list[float]) -> tuple[Any, bool]:
    """Run one task (2 s lease, heartbeats every 0.5 s) whose handler is held while both
    clocks move on by each of `advances` seconds in turn, waiting after each for a
    heartbeat's answer; then let it finish. The task once the worker stopped, and
    whether its handler was cancelled."""
    # The manager's time moves only with the worker's, as one clock.
    fake = FakeJobnik(manager=FakeManager(FakeClock(frozen=True)))
    clock, kind = ManualClock(fake.clock), unique("clocked")
    beats = Beats(fake, clock)
    created = await one_task(fake, kind)
    started, release, cancelled = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def held(data: dict[str, Any], ctx: TaskContext) -> None:
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    worker = Worker(
        beats,
        stage_types=kind,
        handler=held,
        lease=timedelta(seconds=2),
        heartbeat_interval=timedelta(seconds=0.5),
        claim_wait=timedelta(0),
        poll_backoff=QUICK,
        handle_signals=False,
        clock=clock,
    )
    ticking: asyncio.Task[None] | None = None
    try:
        async with worker:
            try:
                await asyncio.wait_for(started.wait(), 10)
                for seconds in advances:
                    before = beats.answered
                    clock.advance(seconds)

                    async def beaten(before: int = before) -> bool | None:
                        # Answered, and the lease keeper asleep again until its next beat:
                        # the manager answers from its own thread, at no set turn of this
                        # loop.
                        again = clock.asleep_until(
                            clock.monotonic() + 0.5, since=beats.answered_after_sleeps
                        )
                        answered = beats.answered > before
                        return True if answered and (again or cancelled.is_set()) else None

                    await eventually(beaten, f"the heartbeat due at {clock.monotonic()} s")
                if cancelled.is_set():
                    result = await fake.get_task(created.id), True
                else:
                    release.set()
                    done = in_status(fake, created.id, TaskStatus.COMPLETED)
                    result = await eventually(done, "the task to complete"), False
            finally:
                # The worker stops on its clock too (a poll's pause, a report's linger,
                # the grace a held handler gets when the test failed): time must pass
                # for it, and nothing else moves this clock now.
                release.set()
                ticking = asyncio.create_task(clock.run())
    finally:
        if ticking is not None:
            ticking.cancel()
    return result


async def test_heartbeats_keep_a_claim_for_twice_its_lease_without_sleeping() -> None:
    task, cancelled = await run_held_task([0.5] * 8)  # 4 s on both clocks
    assert (task.status, task.attempts, cancelled) == (TaskStatus.COMPLETED, 0, False)


async def test_a_claim_whose_lease_ran_out_between_heartbeats_is_lost() -> None:
    # Both clocks jump past the 2 s lease before the next heartbeat: the manager has let
    # the claim go, the heartbeat hears so, and the handler is cancelled unreported.
    task, cancelled = await run_held_task([3.0])
    assert cancelled
    assert task.status is not TaskStatus.COMPLETED
