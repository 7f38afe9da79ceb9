"""PostgreSQL: the claim and the completion run on asyncpg directly (`db.direct`); a
connection of theirs lost between requests is replaced, and the request still answers."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

pytestmark = pytest.mark.postgres_only


async def _terminate_other_backends(db: Database) -> int:
    async with db.engine.connect() as conn:
        killed = await conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
        return len(killed.all())


async def test_dequeue_and_report_survive_their_connections_being_terminated(
    pg_api: Api, pg_db: Database
) -> None:
    stage_type = unique("direct")
    job = await pg_api.create_job()
    stage = await pg_api.create_stage(job["id"], stage_type)
    await pg_api.create_tasks(stage["id"], 3)

    first = await pg_api.dequeue(stage_type)
    assert first is not None
    assert await _terminate_other_backends(pg_db) >= 1  # the direct pool's connection, at least
    second = await pg_api.dequeue(stage_type)
    assert second is not None and second["id"] != first["id"]

    await _terminate_other_backends(pg_db)
    done = await pg_api.report(first["id"], "COMPLETED")
    assert (done["id"], done["status"]) == (first["id"], "COMPLETED")
    assert done["leaseId"] == first["leaseId"] and "endTime" in done
    await assert_invariants(pg_db)


async def test_dequeue_of_several_types_binds_them_as_an_array(pg_api: Api) -> None:
    # The batch claim takes a list of types: one statement whatever the list's length.
    types = [unique("direct-a"), unique("direct-b"), unique("direct-c")]
    job = await pg_api.create_job()
    stage = await pg_api.create_stage(job["id"], types[1])
    (task,) = await pg_api.create_tasks(stage["id"], 1)
    body = {"stageTypes": types, "limit": 5}
    claimed = await pg_api.call("POST", "/v1/tasks/claim", json=body)
    assert [t["id"] for t in claimed["items"]] == [task["id"]]
    assert (await pg_api.call("POST", "/v1/tasks/claim", json=body))["items"] == []
