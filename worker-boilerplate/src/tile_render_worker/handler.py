"""The handler: what this worker does with one task. Replace `Tile` and `render_tile`
with your own task data model and work."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobnik_sdk import TaskContext

# Stands in for real work, so the example takes a moment like a real task would.
RENDER_SECONDS = 0.1


class Tile(BaseModel):
    """A task's `data`: the map tile to render."""

    # A typo in a producer's field name should fail the task, not render tile 0/0/0.
    model_config = ConfigDict(extra="forbid")

    x: int = Field(ge=0)
    y: int = Field(ge=0)
    zoom: int = Field(ge=0, le=22)

    @model_validator(mode="after")
    def _on_the_map(self) -> Tile:
        side = 2**self.zoom
        if self.x >= side or self.y >= side:
            raise ValueError(
                f"tile {self.x}/{self.y} is off the {side}x{side} map at zoom {self.zoom}"
            )
        return self


async def render_tile(tile: Tile, ctx: TaskContext) -> dict[str, str]:
    """Render one tile. Returning marks the task COMPLETED, with what it returns as the
    task's `result`; raising marks it FAILED (see the README for the errors that steer
    retries: NonRetryableError, RetryLaterError).

    The worker validates the task's data into `Tile` before calling this; data that
    does not fit fails the task without calling it.
    """
    name = f"{tile.zoom}/{tile.x}/{tile.y}"
    ctx.logger.info("rendering tile %s", name)
    await asyncio.sleep(RENDER_SECONDS)
    await ctx.update_progress(100, tile=name)
    return {"tile": name}
