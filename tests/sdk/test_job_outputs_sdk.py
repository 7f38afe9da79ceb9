"""What a job produced, from the SDK: a Worker's handler records the job's assets and
sets its result through its TaskContext; a producer reads them back. Against the
FakeJobnik and the manager on PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import ValidationError

from jobnik_sdk import JobStatus, NewAsset, NewStage, NewTask, TaskContext

from ..support.api import unique
from ..support.workers import worker
from .conftest import Surface


async def test_a_handler_records_assets_and_the_jobs_result(surface: Surface) -> None:
    kind = unique("export")
    job = await surface.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=[NewTask(data={"zoom": z}) for z in (3, 4)])],
    )

    async def export(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        zoom = data["zoom"]
        added = await ctx.add_asset(
            "tile-pyramid", f"s3://tiles/z{zoom}/", size_bytes=1024 * zoom, name=f"z{zoom}"
        )
        assert (added.job_id, added.task_id) == (job.id, ctx.task.id)
        if zoom == 4:
            answered = await ctx.set_job_result({"levels": [3, 4]})
            assert answered.result == {"levels": [3, 4]}
        return {"zoom": zoom}

    async with worker(surface, kind, export):
        deadline = time.monotonic() + 10
        while (await surface.get_job(job.id)).status is not JobStatus.COMPLETED:
            assert time.monotonic() < deadline, "the job did not complete"
            await asyncio.sleep(0.02)
    done = await surface.get_job(job.id)
    assert done.result == {"levels": [3, 4]}
    assets = await surface.list_job_assets(job.id)
    assert assets.total == 2
    assert sorted((a.uri, a.size_bytes, a.name) for a in assets.items) == [
        ("s3://tiles/z3/", 3072, "z3"),
        ("s3://tiles/z4/", 4096, "z4"),
    ]
    first = await surface.list_job_assets(job.id, page=2, page_size=1)
    assert (first.total, len(first.items)) == (2, 1)


async def test_assets_by_hand_in_one_call(surface: Surface) -> None:
    kind = unique("by-hand")
    await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])])
    (claimed,) = await surface.claim([kind])
    added = await surface.add_task_assets(
        claimed.id,
        [NewAsset(type="report", uri="/r.pdf"), NewAsset(type="log", uri="/run.log", size_bytes=0)],
        lease_id=claimed.lease_id,
    )
    assert [(a.type, a.size_bytes) for a in added] == [("report", None), ("log", 0)]


def test_a_bad_asset_is_refused_before_it_is_sent() -> None:
    for bad in (
        {"type": "", "uri": "/x"},
        {"type": "t", "uri": ""},
        {"type": "t", "uri": "/x", "size_bytes": -1},
    ):
        with pytest.raises(ValidationError):
            NewAsset(**bad)
