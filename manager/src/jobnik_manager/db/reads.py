"""Jobs, stages and tasks by their keys, as a statement of their own: on PostgreSQL,
run directly on asyncpg (db/sql/read.sql, db/direct.py); on SQLite, on the writer's
connection and thread (db/sqlite_writer.py), one hop from the event loop. The stages and
jobs are read by a list of keys: the reads that many workers make at once go as one
(services/batching.py).

These are the reads a v1 worker makes around each task (the reference SDK reads the
task's stage and its job before every handler), so each costs a key lookup and no
more: no session, no ORM identity map, no walk of the stage's tasks.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Table

from ..domain.statuses import StageStatus
from ..domain.summary import COUNTERS
from .direct import DirectStatement
from .engine import Database
from .models import JOBS, STAGES, TASKS, Job, Stage
from .queries import queries, statement
from .records import detached, model_values
from .sqlite_values import Columns


def _by_keys(
    conn: sqlite3.Connection, table: Table, key: str, values: Sequence[Any], *, order_by: str = ""
) -> list[dict[str, Any]]:
    """SQLite: the rows of `table` whose `key` column is one of `values`, converted as
    SQLAlchemy converts them (db/sqlite_values.py)."""
    if not values:
        return []
    columns = _columns(table)
    order = f" ORDER BY {order_by}" if order_by else ""
    marks = ", ".join("?" * len(values))
    sql = f"SELECT * FROM {table.name} WHERE {key} IN ({marks}){order}"
    return columns.rows(conn.execute(sql, [columns.bind(key, v) for v in values]))


@cache
def _columns(table: Table) -> Columns:
    return Columns(table)


@cache
def _read(name: str) -> DirectStatement:
    return statement(queries("read")[name])


async def task_columns(db: Database, task_id: uuid.UUID) -> Mapping[str, Any] | None:
    """The task's columns by name, or None."""
    if db.is_sqlite:
        rows = await db.sqlite_direct(lambda conn: _by_keys(conn, TASKS, "id", [task_id]))
        return rows[0] if rows else None
    rows = await db.direct(_read("task"), {"id": task_id}, replay_safe=True)
    return dict(rows[0].items()) if rows else None


async def stages(db: Database, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Stage]:
    """The stages of `ids` that exist, by id, as models' attributes (`detached`)."""
    if db.is_sqlite:
        rows = await db.sqlite_direct(lambda conn: _by_keys(conn, STAGES, "id", ids))
        return {r["id"]: detached(Stage, r) for r in rows}
    rows = await db.direct(_read("stages"), {"ids": list(ids)}, replay_safe=True)
    return {r["id"]: detached(Stage, model_values(STAGES, r)) for r in rows}


async def jobs_and_stages(
    db: Database, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, tuple[Job, list[Stage]]]:
    """The jobs of `ids` that exist, by id, each with its stages, as models' attributes
    (`detached`; on PostgreSQL the stages hold only what the job's progress reads of
    them)."""
    if db.is_sqlite:

        def read(conn: sqlite3.Connection) -> dict[uuid.UUID, tuple[Job, list[Stage]]]:
            found: dict[uuid.UUID, tuple[Job, list[Stage]]] = {
                r["id"]: (detached(Job, r), []) for r in _by_keys(conn, JOBS, "id", ids)
            }
            of_jobs = _by_keys(conn, STAGES, "job_id", list(found), order_by="stage_order")
            for r in of_jobs:
                found[r["job_id"]][1].append(detached(Stage, r))
            return found

        return await db.sqlite_direct(read)
    rows = await db.direct(_jobs_statement(), {"ids": list(ids)}, replay_safe=True)
    jobs: dict[uuid.UUID, tuple[Job, list[Stage]]] = {}
    for r in rows:
        job = jobs.get(r["id"])
        if job is None:
            job = jobs[r["id"]] = (detached(Job, model_values(JOBS, r)), [])
        if r["stage_status"] is not None:
            stage = {name: r[f"stage_{name}"] for name in _JOB_STAGE_COLUMNS}
            job[1].append(detached(Stage, {**stage, "status": StageStatus(r["stage_status"])}))
    return jobs


# What a job's progress reads of each of its stages (services/progress.py).
_JOB_STAGE_COLUMNS = ("running_progress", *COUNTERS)


@cache
def _jobs_statement() -> DirectStatement:
    sql = queries("read")["jobs"]
    missing = [c for c in ("status", *_JOB_STAGE_COLUMNS) if f"AS stage_{c}" not in sql]
    if missing:
        raise AssertionError(f"read.sql's jobs reads no stage_{missing[0]}")
    return statement(sql)
