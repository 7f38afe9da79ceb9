"""The handler the end-to-end worker processes run (WORKER_HANDLER points here): the
boilerplate's example handler, with misbehaviour the test asks for through each task's
user metadata, and the id of the process that ran it."""

from __future__ import annotations

import asyncio
import os

from jobnik_sdk import NonRetryableError, TaskContext
from tile_render_worker.handler import Tile, render_tile


async def handle(tile: Tile, ctx: TaskContext) -> None:
    asked = dict(ctx.task.user_metadata)
    await ctx.set_user_metadata({**asked, "pid": os.getpid()})
    if seconds := asked.get("sleepSeconds"):
        await asyncio.sleep(float(seconds))
    if asked.get("nonRetryable"):
        raise NonRetryableError("this tile can never be rendered")
    if asked.get("failOnce") and ctx.attempt == 1:
        raise RuntimeError("the first attempt fails")
    await render_tile(tile, ctx)
