"""Task handlers for tests of the SDK Worker, with the events a test waits on to know
where the handlers are."""

from __future__ import annotations

import asyncio
from typing import Any

from jobnik_sdk import TaskContext


class Held:
    """Runs until it is cancelled: `started` is set as a task starts, `cancelled` as one
    is cancelled (the cancellation goes on out of the handler)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def __call__(self, data: dict[str, Any], ctx: TaskContext) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()  # never ends of itself
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


class Gate:
    """Holds every task until `release` is set; `all_running` is set once `count` tasks
    run at the same time."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.running = 0
        self.all_running = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, data: dict[str, Any], ctx: TaskContext) -> None:
        self.running += 1
        if self.running == self.count:
            self.all_running.set()
        await self.release.wait()
