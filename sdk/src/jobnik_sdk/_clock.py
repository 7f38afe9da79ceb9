"""The one source of time for a Worker and its loops: monotonic seconds, and sleeping.

Everything a Worker measures or waits out (leases, heartbeats, report deadlines and
lingering, idle polls, the shutdown grace) goes through one `Clock`, so a test can hand
it a clock that it moves on itself instead of sleeping in real time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable
from contextlib import suppress
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    """Monotonic time in seconds, and a sleep measured on it."""

    def monotonic(self) -> float:
        """Seconds from some fixed point; never goes back."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` have passed on this clock."""
        ...


class SystemClock:
    """The real time: `time.monotonic` and `asyncio.sleep`."""

    def monotonic(self) -> float:
        """`time.monotonic()`."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep(seconds)`."""
        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK: Clock = SystemClock()


async def wait_any(
    futures: Iterable[asyncio.Future[Any]], seconds: float | None, clock: Clock
) -> None:
    """Return once one of `futures` is done, or `seconds` have passed on `clock` (None:
    no limit). The futures are left as they are."""
    waiting = set(futures)
    if seconds is None:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        return
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({*waiting, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()


async def wait_event(event: asyncio.Event, seconds: float | None, clock: Clock) -> bool:
    """Wait for `event` for up to `seconds` on `clock`; whether it is set."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await wait_any({waiter}, seconds, clock)
    finally:
        waiter.cancel()
    return event.is_set()


async def within(work: Awaitable[T], seconds: float, clock: Clock) -> T:
    """`work`'s result, or TimeoutError once `seconds` have passed on `clock` (and
    `work` is cancelled)."""
    task = asyncio.ensure_future(work)
    try:
        await wait_any({task}, seconds, clock)
    finally:
        if not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        raise TimeoutError
    return task.result()
