"""The invariant check that every concurrency test and benchmark relies on catches what
it is there to catch: a task row that a broken move could leave behind fails it, on
both backends, while the same job left as its moves made it passes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, insert, update

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Stage, Task, WorkflowEvent
from jobnik_manager.domain.workflows import STARTED

from ..support.api import Api, unique
from ..support.invariants import assert_invariants
from .test_ojs_workflows import ack, create, fetch, job

BROKEN: dict[str, dict[str, Any]] = {
    # A claimable flag that lies about a PENDING task of a running job.
    "claimable flag": {"claimable": False},
    "stage type is not its stage's": {"stage_type": "elsewhere"},
}


async def change(db: Database, table: type[Task] | type[Stage], key: str, **values: Any) -> None:
    row = update(table).where(table.id == uuid.UUID(key)).values(**values)
    await db.transaction(lambda s: s.execute(row))


@pytest.mark.parametrize("broken", sorted(BROKEN))
async def test_a_task_row_that_breaks_a_rule_fails_the_check(
    api: Api, db: Database, broken: str
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("checked"))
    task = (await api.create_tasks(stage["id"], 3))[1]["id"]
    await assert_invariants(db)
    await change(db, Task, task, **BROKEN[broken])
    with pytest.raises(AssertionError, match=broken):
        await assert_invariants(db)


async def test_an_unfinished_task_in_a_completed_job_fails_the_check(
    api: Api, db: Database
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("checked"))
    await api.create_tasks(stage["id"], 2)
    for _ in range(2):
        task = await api.call("PATCH", f"/v1/stages/{stage['type']}/tasks/dequeue")
        await api.report(task["id"], "COMPLETED")
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)
    # Its stage's counters are kept in step, so that only the task's own rule is broken.
    await change(db, Task, task["id"], status="FAILED")
    await change(db, Stage, stage["id"], completed=1, failed=1)
    with pytest.raises(AssertionError, match="unfinished in a completed job"):
        await assert_invariants(db)


@pytest.mark.parametrize("broken", ["told twice", "not told"])
async def test_a_workflow_told_otherwise_than_its_marks_fails_the_check(
    client: httpx.AsyncClient, db: Database, broken: str
) -> None:
    queue = unique("told").lower()
    made = await create(client, {"type": "chain", "steps": [job("a.b", queue)]})
    [step] = await fetch(client, queue)
    await ack(client, step["id"])
    await assert_invariants(db)  # started and completed, each told once
    workflow_id = uuid.UUID(made["id"])
    if broken == "told twice":
        again = insert(WorkflowEvent).values(
            workflow_id=workflow_id, type=STARTED, time=db.clock.now(), data={}
        )
        await db.transaction(lambda s: s.execute(again))
    else:
        gone = delete(WorkflowEvent).where(WorkflowEvent.type != STARTED)
        await db.transaction(lambda s: s.execute(gone))
    with pytest.raises(AssertionError, match=f"workflow {workflow_id} told"):
        await assert_invariants(db)


async def test_an_event_of_a_job_that_is_gone_fails_the_check(pg_db: Database) -> None:
    # PostgreSQL holds no event to its job by a foreign key (SQLite does): a delete that
    # forgot a job's events would leave them behind.
    await assert_invariants(pg_db)
    gone = {"job_id": uuid.uuid4(), "entity": "JOB", "entity_id": uuid.uuid4()}
    orphan = insert(Event).values(**gone, time=datetime.now(UTC))
    await pg_db.transaction(lambda s: s.execute(orphan))
    with pytest.raises(AssertionError, match=r"events of job .* which is gone"):
        await assert_invariants(pg_db)
