"""The example handler, run once per test without a manager (jobnik_sdk.testing)."""

from __future__ import annotations

import pytest

from jobnik_sdk import NonRetryableError
from jobnik_sdk.testing import make_context, run_handler
from worker.handler import Tile, render_tile


async def test_renders_a_tile_and_records_progress() -> None:
    ctx = await run_handler(render_tile, {"x": 3, "y": 5, "zoom": 4}, stage_type="tile-render")
    assert ctx.user_metadata == {"progress": 100, "tile": "4/3/5"}
    assert ctx.stage.type == "tile-render"


async def test_keeps_the_metadata_a_producer_set() -> None:
    ctx = await run_handler(render_tile, {"x": 0, "y": 0, "zoom": 0}, user_metadata={"batch": 7})
    assert ctx.user_metadata["batch"] == 7


@pytest.mark.parametrize(
    "data",
    [
        {"x": 1, "y": 1},  # no zoom
        {"x": -1, "y": 0, "zoom": 3},
        {"x": 8, "y": 0, "zoom": 3},  # off the 8x8 map
        {"x": 1, "y": 1, "zoom": 3, "colour": "red"},  # unknown field
        {"x": "one", "y": 1, "zoom": 3},
    ],
)
async def test_refuses_data_that_is_not_a_tile(data: dict[str, object]) -> None:
    # The worker validates before calling the handler, and such a task must not be
    # tried again: the same data would fail the same way.
    with pytest.raises(NonRetryableError):
        await run_handler(render_tile, data)


async def test_can_be_called_directly_with_a_context() -> None:
    ctx = make_context({"x": 1, "y": 2, "zoom": 2}, attempts=1, max_attempts=3)
    await render_tile(Tile(x=1, y=2, zoom=2), ctx)
    assert ctx.attempt == 2
    assert ctx.user_metadata["progress"] == 100
