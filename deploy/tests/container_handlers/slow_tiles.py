"""The worker template's handler, after `sleep` seconds taken from the task's data: the
container tests need a task that is still running when they kill its worker."""

from __future__ import annotations

import asyncio
from typing import Any

from jobnik_sdk import TaskContext
from tile_render_worker.handler import Tile, render_tile


async def render(data: dict[str, Any], ctx: TaskContext) -> dict[str, str]:
    await asyncio.sleep(float(data.pop("sleep", 0)))
    return await render_tile(Tile(**data), ctx)
