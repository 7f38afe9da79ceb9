"""The handler every drain benchmark runs: it does nothing, and says when it has been
called as often as there are tasks."""

from __future__ import annotations

import asyncio
from typing import Any


class Noop:
    """A no-op handler (`Noop(n).handle`) that sets `done` on its n-th call."""

    def __init__(self, tasks: int) -> None:
        self.tasks = tasks
        self.handled = 0
        self.done = asyncio.Event()

    async def handle(self, data: dict[str, Any], ctx: Any) -> None:
        self.handled += 1
        if self.handled >= self.tasks:
            self.done.set()
