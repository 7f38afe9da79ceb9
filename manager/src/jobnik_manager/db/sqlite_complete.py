"""SQLite: completions that leave their stage open, as one transaction on the writer's
thread (db/sql/sqlite_complete.sql); the counterpart of PostgreSQL's `db.complete`.

A task is settled here when it is IN_PROGRESS under a live lease (or the report names
none) and its stage is running with other tasks still to finish; the rest (a stage
the batch would finish, a refused or repeated report) is left untouched, not returned,
for the full settlement with the cascade.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from ..domain.moves import EVENT_COLUMNS, TASK_COMPLETED
from ..domain.statuses import StageStatus
from .models import EVENTS, TASKS
from .queries import queries
from .sqlite_values import Columns, assignments, moved, task_moved_event


@dataclass(frozen=True, slots=True)
class Completion:
    """A report of COMPLETED: the task, the lease it names (if any), its result."""

    task_id: uuid.UUID
    lease_id: uuid.UUID | None
    result: dict[str, Any] | None


@cache
def _tables() -> tuple[Columns, Columns]:
    return Columns(TASKS), Columns(EVENTS)


@cache
def _sql() -> dict[str, str]:
    q = queries("sqlite_complete")
    return q | {"done": q["done"].format(completed=assignments(TASK_COMPLETED, "m_"))}


def complete(
    conn: sqlite3.Connection,
    reports: Sequence[Completion],
    now: datetime,
    principal: str | None,
) -> list[dict[str, Any]]:
    """Settle the completions that leave their stage open (`reports` name each task
    once); answers the settled tasks' columns, by task id."""
    sql = _sql()
    tasks, events = _tables()
    bind_id = tasks.binder("id")
    asked = {bind_id(r.task_id): r for r in reports}
    running = str(TASK_COMPLETED.source)
    bound_now = tasks.bind("update_time", now)
    valid: dict[int, tuple[str, Any]] = {}  # seq: stored stage id, result
    for seq, task_id, stage_id, status, lease_id, expires in conn.execute(
        sql["candidates"], {"ids": json.dumps(list(asked))}
    ).fetchall():
        r = asked[task_id]
        # Times compare as stored text, as they would in SQL.
        live = r.lease_id is None or (lease_id == bind_id(r.lease_id) and expires > bound_now)
        if status == running and live:
            valid[seq] = (stage_id, tasks.bind("result", r.result))
    if not valid:
        return []
    counts = Counter(stage_id for stage_id, _ in valid.values())
    open_stages = set()
    for stage_id in sorted(counts):
        if conn.execute(
            sql["bumped"],
            {
                "n": counts[stage_id],
                "now": bound_now,
                "id": stage_id,
                "stage_running": str(StageStatus.IN_PROGRESS),
            },
        ).fetchall():
            open_stages.add(stage_id)
    settled = [
        [seq, result] for seq, (stage_id, result) in valid.items() if stage_id in open_stages
    ]
    if not settled:
        return []
    done = tasks.rows(
        conn.execute(
            sql["done"], moved(tasks, TASK_COMPLETED, now, "m_") | {"settled": json.dumps(settled)}
        )
    )
    done.sort(key=lambda row: row["id"])
    conn.executemany(
        events.insert(EVENT_COLUMNS),
        [events.bound(task_moved_event(TASK_COMPLETED, row, now, principal)) for row in done],
    )
    return done
