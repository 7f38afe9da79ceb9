"""A deleted job takes everything under it along, its history included: on PostgreSQL
events and tasks are not held to their job by a foreign key, so the delete's own
statements are all that removes them."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Stage, Task

from ..support.api import Api, unique
from ..support.invariants import assert_invariants


async def test_a_deleted_job_leaves_no_event_task_or_stage(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("deleted"))
    await api.create_tasks(stage["id"], 3)
    for _ in range(3):
        await api.run_one(stage["type"])
    kept = await api.create_job()  # another job's rows stay
    await api.create_tasks((await api.create_stage(kept["id"]))["id"], 2)
    assert (await api.job(job["id"]))["status"] == "COMPLETED"

    async def rows(job_id: str) -> dict[str, int]:
        async with db.sessions() as s:
            return {
                model.__tablename__: int(
                    await s.scalar(select(func.count()).where(model.job_id == uuid.UUID(job_id)))
                    or 0
                )
                for model in (Event, Task, Stage)
            }

    before = await rows(job["id"])
    assert before["events"] >= 9 and before["tasks"] == 3 and before["stages"] == 1
    others = await rows(kept["id"])
    await api.call("DELETE", f"/v1/jobs/{job['id']}")
    assert await rows(job["id"]) == {"events": 0, "tasks": 0, "stages": 0}
    assert await rows(kept["id"]) == others
    await assert_invariants(db)
