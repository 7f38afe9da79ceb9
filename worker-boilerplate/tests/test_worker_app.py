"""The assembled worker runs the example handler over a job on the in-memory fake."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobnik_sdk import JobStatus, NewStage, NewTask, TaskStatus
from jobnik_sdk.testing import FakeJobnik
from worker.app import build_worker, load_handler
from worker.handler import render_tile
from worker.settings import WorkerSettings


def settings(**overrides: object) -> WorkerSettings:
    values: dict[str, object] = {
        "stage_type": "tile-render",
        "concurrency": 4,
        "poll_initial_seconds": 0.01,
        "poll_max_seconds": 0.05,
        **overrides,
    }
    return WorkerSettings(_env_file=None, **values)  # type: ignore[call-arg,arg-type]


async def test_runs_a_job_to_completion() -> None:
    fake = FakeJobnik()
    tiles = [NewTask(data={"x": x, "y": y, "zoom": 1}) for x in range(2) for y in range(2)]
    bad = NewTask(data={"x": 9, "y": 9, "zoom": 1})
    good_job = await fake.create_job("tiles", stages=[NewStage(type="tile-render", tasks=tiles)])
    bad_job = await fake.create_job("bad", stages=[NewStage(type="tile-render", tasks=[bad])])

    worker = build_worker(settings(name="tiler-test", lease_seconds=20, heartbeat_seconds=5), fake)
    async with worker:
        done = await fake.wait(good_job.id, timeout=timedelta(seconds=10))
        failed = await fake.wait(bad_job.id, timeout=timedelta(seconds=10))

    assert done.status is JobStatus.COMPLETED
    assert failed.status is JobStatus.FAILED
    assert good_job.stages is not None
    tasks = (await fake.list_tasks(stage_id=good_job.stages[0].id)).items
    assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 4
    assert all(t.user_metadata["progress"] == 100 for t in tasks)
    assert {t.worker for t in tasks} == {"tiler-test"}
    assert sorted(t.result["tile"] for t in tasks if t.result) == [
        "1/0/0",
        "1/0/1",
        "1/1/0",
        "1/1/1",
    ]
    for t in tasks:
        assert t.lease_expires_at is not None and t.start_time is not None
        assert timedelta(seconds=19) < t.lease_expires_at - t.start_time <= timedelta(seconds=20)
    assert bad_job.stages is not None
    [refused] = (await fake.list_tasks(stage_id=bad_job.stages[0].id)).items
    assert refused.reason is not None and "off the 2x2 map" in refused.reason


def test_handler_is_selected_by_reference() -> None:
    assert load_handler("worker.handler:render_tile") is render_tile
    with pytest.raises(ValueError):
        load_handler("worker.handler")
    with pytest.raises(AttributeError):
        load_handler("worker.handler:missing")
