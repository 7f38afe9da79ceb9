"""One job, stage or task by its key, as a statement of its own: on PostgreSQL, run
directly on asyncpg (db/sql/read.sql, db/direct.py); on SQLite, on the writer's
connection and thread (db/sqlite_writer.py), one hop from the event loop.

These are the reads a v1 worker makes around each task (the reference SDK reads the
task's stage and its job before every handler), so each costs a key lookup and no
more: no session, no ORM identity map, no walk of the stage's tasks.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Mapping
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


def _by_key(
    conn: sqlite3.Connection, table: Table, key: str, value: Any, *, order_by: str = ""
) -> list[dict[str, Any]]:
    """SQLite: the rows of `table` whose `key` column is `value`, converted as
    SQLAlchemy converts them (db/sqlite_values.py)."""
    columns = _columns(table)
    order = f" ORDER BY {order_by}" if order_by else ""
    sql = f"SELECT * FROM {table.name} WHERE {key} = ?{order}"
    return columns.rows(conn.execute(sql, (columns.bind(key, value),)))


@cache
def _columns(table: Table) -> Columns:
    return Columns(table)


@cache
def _read(name: str) -> DirectStatement:
    return statement(queries("read")[name])


async def task_columns(db: Database, task_id: uuid.UUID) -> Mapping[str, Any] | None:
    """The task's columns by name, or None."""
    if db.is_sqlite:
        rows = await db.sqlite_direct(lambda conn: _by_key(conn, TASKS, "id", task_id))
        return rows[0] if rows else None
    rows = await db.direct(_read("task"), {"id": task_id}, replay_safe=True)
    return dict(rows[0].items()) if rows else None


async def stage(db: Database, stage_id: uuid.UUID) -> Stage | None:
    """The stage's columns, as a model's attributes (`detached`), or None."""
    if db.is_sqlite:
        rows = await db.sqlite_direct(lambda conn: _by_key(conn, STAGES, "id", stage_id))
        return detached(Stage, rows[0]) if rows else None
    rows = await db.direct(_read("stage"), {"id": stage_id}, replay_safe=True)
    return detached(Stage, model_values(STAGES, rows[0])) if rows else None


async def job_and_stages(db: Database, job_id: uuid.UUID) -> tuple[Job, list[Stage]] | None:
    """The job and its stages, as models' attributes (`detached`; on PostgreSQL the
    stages hold only what the job's progress reads of them), or None."""
    if db.is_sqlite:

        def read(conn: sqlite3.Connection) -> tuple[Job, list[Stage]] | None:
            jobs = _by_key(conn, JOBS, "id", job_id)
            if not jobs:
                return None
            stages = _by_key(conn, STAGES, "job_id", job_id, order_by="stage_order")
            return detached(Job, jobs[0]), [detached(Stage, r) for r in stages]

        return await db.sqlite_direct(read)
    rows = await db.direct(_job_statement(), {"id": job_id}, replay_safe=True)
    if not rows:
        return None
    stages = [
        detached(
            Stage,
            {
                **{name: r[f"stage_{name}"] for name in _JOB_STAGE_COLUMNS},
                "status": StageStatus(r["stage_status"]),
            },
        )
        for r in rows
        if r["stage_status"] is not None
    ]
    return detached(Job, model_values(JOBS, rows[0])), stages


# What a job's progress reads of each of its stages (services/progress.py).
_JOB_STAGE_COLUMNS = ("running_progress", *COUNTERS)


@cache
def _job_statement() -> DirectStatement:
    sql = queries("read")["job"]
    missing = [c for c in ("status", *_JOB_STAGE_COLUMNS) if f"AS stage_{c}" not in sql]
    if missing:
        raise AssertionError(f"read.sql's job reads no stage_{missing[0]}")
    return statement(sql)
