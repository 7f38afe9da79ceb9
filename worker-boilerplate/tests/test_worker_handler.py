"""The example handler, run without a manager (jobnik_sdk.testing). Replace these tests
with your handler's when you replace the handler."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobnik_sdk import JobStatus, NewStage, NewTask, NonRetryableError, TaskStatus, Worker
from jobnik_sdk.testing import FakeJobnik, make_context, run_attempt, run_handler
from tile_render_worker import handler
from tile_render_worker.handler import Tile, render_tile
from tile_render_worker.settings import STAGE_TYPE


async def test_renders_a_tile_and_records_progress() -> None:
    ctx = await run_handler(render_tile, {"x": 3, "y": 5, "zoom": 4}, stage_type=STAGE_TYPE)
    assert ctx.user_metadata == {"progress": 100, "tile": "4/3/5"}
    assert ctx.stage.type == STAGE_TYPE


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


async def test_an_attempt_completes_with_the_tile_as_its_result() -> None:
    # run_attempt runs the handler as the Worker runs an attempt: `outcome` is what the
    # Worker would report, `progress` and `heartbeats` what it would send.
    run = await run_attempt(render_tile, {"x": 3, "y": 5, "zoom": 4}, stage_type=STAGE_TYPE)
    assert run.outcome is not None and run.outcome.status is TaskStatus.COMPLETED
    assert run.outcome.result == {"tile": "4/3/5"}
    assert [p.percentage for p in run.progress] == [100]


async def test_a_tile_off_the_map_fails_for_good() -> None:
    run = await run_attempt(render_tile, {"x": 9, "y": 0, "zoom": 1}, max_attempts=3)
    assert run.outcome is not None
    assert (run.outcome.status, run.outcome.retryable) == (TaskStatus.FAILED, False)


async def test_stops_when_its_job_is_aborted(monkeypatch: pytest.MonkeyPatch) -> None:
    # The manager answers a heartbeat that the job was aborted: the Worker cancels the
    # handler, which stops before writing anything, and reports nothing. A render long
    # enough that the abort lands while it runs, however busy the machine.
    monkeypatch.setattr(handler, "RENDER_SECONDS", 30.0)
    run = await run_attempt(
        render_tile,
        {"x": 0, "y": 0, "zoom": 0},
        abort_at_heartbeat=1,
        heartbeat_interval=timedelta(milliseconds=20),  # beats while the tile renders
    )
    assert (run.cancelled, run.outcome) == ("its job was aborted", None)
    assert run.progress == [] and "tile" not in run.context.user_metadata


async def test_can_be_called_directly_with_a_context() -> None:
    ctx = make_context({"x": 1, "y": 2, "zoom": 2}, attempts=1, max_attempts=3)
    await render_tile(Tile(x=1, y=2, zoom=2), ctx)
    assert ctx.attempt == 2
    assert ctx.user_metadata["progress"] == 100


async def test_a_worker_renders_a_job_and_fails_a_tile_off_the_map() -> None:
    fake = FakeJobnik()
    tiles = [NewTask(data={"x": x, "y": y, "zoom": 1}) for x in range(2) for y in range(2)]
    off_the_map = NewTask(data={"x": 9, "y": 9, "zoom": 1}, max_attempts=3)
    good_job = await fake.create_job("tiles", stages=[NewStage(type=STAGE_TYPE, tasks=tiles)])
    bad_job = await fake.create_job("bad", stages=[NewStage(type=STAGE_TYPE, tasks=[off_the_map])])

    async with Worker(
        fake, stage_types=STAGE_TYPE, handler=render_tile, concurrency=4, handle_signals=False
    ):
        done = await fake.wait(good_job.id, timeout=timedelta(seconds=10))
        failed = await fake.wait(bad_job.id, timeout=timedelta(seconds=10))

    assert done.status is JobStatus.COMPLETED
    assert good_job.stages is not None
    tasks = (await fake.list_tasks(stage_id=good_job.stages[0].id)).items
    assert sorted(t.result["tile"] for t in tasks if t.result) == [
        "1/0/0",
        "1/0/1",
        "1/1/0",
        "1/1/1",
    ]
    # Attempts were left, but data that does not validate is not tried again.
    assert failed.status is JobStatus.FAILED
    assert bad_job.stages is not None
    [refused] = (await fake.list_tasks(stage_id=bad_job.stages[0].id)).items
    assert refused.status is TaskStatus.FAILED and refused.attempts == 1
    assert refused.reason is not None and "off the 2x2 map" in refused.reason
