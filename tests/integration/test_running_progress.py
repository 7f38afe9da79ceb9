"""A stage's progress comes from its counters: the progress its running tasks report
is added to `running_progress` as they report it and taken out as they leave
IN_PROGRESS, whichever path moves them (a report, a failure, the reaper, an abort), and
what GET answers equals the recount from the tasks."""

from __future__ import annotations

from typing import Any

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.reaper import reap_expired

from ..support.api import Api, unique
from ..support.invariants import assert_invariants


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def beat(api: Api, task: dict[str, Any], progress: int) -> None:
    await api.call(
        "POST",
        f"/v1/tasks/{task['id']}/heartbeat",
        json={"leaseId": task["leaseId"], "progress": progress},
    )


async def test_running_progress_follows_every_path_out_of_in_progress(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("progress"))
    await api.create_tasks(stage["id"], 6, maxAttempts=3)
    claimed = [
        await api.call(
            "PATCH",
            f"/v1/stages/{stage['type']}/tasks/dequeue",
            params={"lease_seconds": 60 if i != 2 else 5},
        )
        for i in range(5)
    ]
    for task, progress in zip(claimed, (40, 60, 20, 10, 0), strict=True):
        await beat(api, task, progress)
    await beat(api, claimed[3], 50)  # a second report replaces the first
    # Nothing completed yet: the running tasks' last reports summed, over six tasks.
    assert (await api.stage(stage["id"]))["progress"] == pytest.approx((40 + 60 + 20 + 50) / 6)
    await assert_invariants(db)

    await api.report(claimed[0]["id"], "COMPLETED")  # 40 leaves, 100 comes in as done
    await api.report(claimed[1]["id"], "FAILED")  # 60 leaves: it will run again
    clock.advance(10)  # the third's lease runs out
    assert await reap_expired(db) == 1
    got = await api.stage(stage["id"])
    assert got["progress"] == pytest.approx((100 + 50) / 6)
    assert (await api.job(job["id"]))["progress"] == pytest.approx((100 + 50) / 6)
    await assert_invariants(db)

    await api.set_job_status(job["id"], "ABORTED")  # the rest leave IN_PROGRESS
    await assert_invariants(db)
    stages = await api.call("GET", f"/v1/jobs/{job['id']}/stages")
    assert stages[0]["progress"] == pytest.approx(100 / 6)
