"""The outbox: rows written with the changes they announce, only when it is on."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import OutboxMessage
from jobnik_manager.dispatch.outbox import Outbox

from ..conftest import app_client
from ..support.api import Api, unique


async def drain(db: Database) -> list[tuple[str, dict[str, Any]]]:
    """The outbox rows so far, oldest first; the table is emptied as a relay would."""
    async with db.sessions() as s, s.begin():
        rows = (await s.execute(select(OutboxMessage).order_by(OutboxMessage.seq))).scalars()
        out = [(r.routing_key, r.payload) for r in rows]
        await s.execute(delete(OutboxMessage))
    return out


def keys(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [key for key, _ in rows]


async def test_a_job_run_announces_readiness_and_lifecycle(db: Database) -> None:
    one, two = unique("one"), unique("two")
    async with app_client(db.with_hooks(Outbox())) as c:
        api = Api(c)
        job = await api.create_job()
        s1 = await api.create_stage(job["id"], one)
        s2 = await api.create_stage(job["id"], two, waiting=True)
        await api.create_tasks(s2["id"])
        created = await drain(db)
        # Stage two's approval is not possible yet: no stage.waiting.
        assert keys(created) == ["job.pending", "stage.pending"]
        await api.create_tasks(s1["id"], 2)
        assert keys(await drain(db)) == [f"task.ready.{one}"]

        await api.run_one(one)
        started = await drain(db)
        assert keys(started) == ["stage.in_progress", "job.in_progress"]
        moved = {"fromStatus": "PENDING", "toStatus": "IN_PROGRESS"}
        stage_start, job_start = (body for _, body in started)
        assert stage_start == {
            "entity": "STAGE",
            "jobId": job["id"],
            **moved,
            "time": stage_start["time"],
            "stageId": s1["id"],
            "stageType": one,
        }
        assert job_start == {
            "entity": "JOB",
            "jobId": job["id"],
            **moved,
            "time": job_start["time"],
        }
        order = ["entity", "jobId", "fromStatus", "toStatus", "time", "stageId", "stageType"]
        assert list(stage_start) == order
        assert datetime.fromisoformat(stage_start["time"]).tzinfo is not None
        await api.run_one(one)
        done = await drain(db)
        assert keys(done) == ["stage.completed", "stage.waiting"]
        waiting = done[1][1]
        assert (waiting["jobId"], waiting["stageId"], waiting["stageType"]) == (
            job["id"],
            s2["id"],
            two,
        )
        await api.approve(s2["id"])
        assert keys(await drain(db)) == ["stage.pending", f"task.ready.{two}"]
        await api.run_one(two)
        assert keys(await drain(db)) == [
            "stage.in_progress",
            "stage.completed",
            "job.completed",
        ]


async def test_a_retry_and_a_resume_wake_workers_again(db: Database) -> None:
    kind = unique("again")
    async with app_client(db.with_hooks(Outbox())) as c:
        api = Api(c)
        job = await api.create_job()
        stage = await api.create_stage(job["id"], kind)
        await api.create_tasks(stage["id"], 2, maxAttempts=2)
        await api.run_one(kind, "FAILED")
        assert keys(await drain(db))[-1] == f"task.ready.{kind}"  # the retry is claimable
        await api.set_job_status(job["id"], "PAUSED")
        await api.set_job_status(job["id"], "PENDING")
        rows = await drain(db)
        assert keys(rows) == ["job.paused", f"task.ready.{kind}", "job.in_progress"]


async def test_nothing_is_written_while_the_outbox_is_off(db: Database, api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    await api.create_tasks(stage["id"])
    await api.run_one(stage["type"])
    assert await drain(db) == []
