"""A running Worker shows in the manager's workers view, as `list_workers` reads it:
its name and stage types at once, the task its handler holds while it runs."""

from __future__ import annotations

import asyncio
from typing import Any

from jobnik_sdk import NewStage, NewTask, TaskContext

from ..support.api import unique
from ..support.handlers import Gate
from ..support.workers import worker
from .conftest import Surface


async def test_a_running_worker_is_listed_with_the_task_it_holds(surface: Surface) -> None:
    kind, idle_kind = unique("tiles"), unique("idle")
    name, idle_name = unique("renderer"), unique("idler")
    held = Gate(1)
    await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])])

    async def nothing(data: dict[str, Any], ctx: TaskContext) -> None:
        raise AssertionError("no task of this type was made")

    async with (
        worker(surface, kind, held, name=name),
        worker(surface, idle_kind, nothing, name=idle_name),
    ):
        try:
            await asyncio.wait_for(held.all_running.wait(), 5)
            # A worker is listed once its first claim is recorded: the idle one's may
            # come a moment after the busy one's task started, on a loaded machine.
            seen: dict[str, Any] = {}
            for _ in range(100):
                seen = {w["name"]: w for w in await surface.list_workers()}
                if {name, idle_name} <= set(seen):
                    break
                await asyncio.sleep(0.05)
            assert (seen[name]["stageTypes"], seen[name]["inFlight"]) == ([kind], 1)
            idle = seen[idle_name]
            assert (idle["stageTypes"], idle["inFlight"]) == ([idle_kind], 0)
        finally:
            held.release.set()  # else the worker waits out its grace period on the way out
