"""SQLite: the claim as one transaction on the writer's thread (db/sql/sqlite_claim.sql).

The counterpart of PostgreSQL's claim statement (`db.claim`): it claims up to `limit`
tasks and starts their leases, bumps their stages' summaries, starts the stages and
jobs this is the first claim of, logs every move and, when announcing, writes the
starts' lifecycle messages, in a constant number of statements whatever the limit. Each
move's columns and event row come from its declaration (domain/moves.py).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from ..domain import announcements
from ..domain.moves import (
    CLAIMS,
    EVENT_COLUMNS,
    JOB_STARTED,
    STAGE_STARTED,
    TASK_CLAIMED,
    TASK_RECLAIMED,
)
from ..domain.statuses import TaskStatus
from ..domain.summary import summary_field
from .models import EVENTS, JOBS, OUTBOX, STAGES, TASKS
from .queries import queries
from .sqlite_values import Columns, assignments, moved, task_moved_event

_CLAIMS = {str(m.source): m for m in CLAIMS}
# The summary counters the statement moves a claimed task out of.
assert {summary_field(TaskStatus(s)) for s in _CLAIMS} == {"pending", "retried"}
assert summary_field(TaskStatus(TASK_CLAIMED.target)) == "in_progress"
# One SET list serves both claims, as one UPDATE makes them.
assert TASK_CLAIMED.columns(datetime.min).keys() == TASK_RECLAIMED.columns(datetime.min).keys()
assert TASK_RECLAIMED.target == TASK_CLAIMED.target
# One SET list and one status check for the starts of a stage and of its job.
assert (JOB_STARTED.source, JOB_STARTED.target) == (STAGE_STARTED.source, STAGE_STARTED.target)
assert STAGE_STARTED.columns(datetime.min).keys() == JOB_STARTED.columns(datetime.min).keys()


@dataclass(frozen=True, slots=True)
class ClaimAsk:
    """Up to `limit` tasks of these stage types, under a lease of `lease` taken by `worker`
    at `now`, by `principal`; with their stages and jobs when `with_context`; the starts
    announced when `announce`."""

    stage_types: tuple[str, ...]
    limit: int
    now: datetime
    lease: timedelta
    worker: str | None
    principal: str | None
    with_context: bool = False
    announce: bool = False


@dataclass(slots=True)
class ClaimedRows:
    """The claimed tasks' columns (with `previous`, the status each was claimed from),
    best first; with context, their stages' and jobs' columns; whether it started a
    stage (and so wrote lifecycle messages, when announcing)."""

    tasks: list[dict[str, Any]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    started: bool = False


class _Tables:
    def __init__(self) -> None:
        self.tasks = Columns(TASKS)
        self.stages = Columns(STAGES)
        self.jobs = Columns(JOBS)
        self.events = Columns(EVENTS)
        self.outbox = Columns(OUTBOX)


@cache
def _tables() -> _Tables:
    return _Tables()


@cache
def _sql() -> dict[str, str]:
    q = queries("sqlite_claim")
    return q | {
        "claimed": q["claimed"].format(claimed=assignments(TASK_CLAIMED, "m_")),
        "stage_started": q["stage_started"].format(started=assignments(STAGE_STARTED, "m_")),
        "job_started": q["job_started"].format(started=assignments(JOB_STARTED, "m_")),
    }


# The line of the one-type claim that skips a limited type; the limited claim drops it.
LIMITS_CHECK = "  AND NOT EXISTS (SELECT 1 FROM stage_type_limits l WHERE l.type = :type)\n"


def claim(conn: sqlite3.Connection, ask: ClaimAsk, *, limited: bool = False) -> ClaimedRows:
    """Run the claim on `conn`, inside the writer's transaction. `limited`: the claim of
    one limited type, within its limit (services.stage_type_limits)."""
    sql, t = _sql(), _tables()
    now = ask.now
    picked_params: dict[str, Any] = {
        "claim_sources": json.dumps(list(_CLAIMS)),
        "n": ask.limit,
        "now": t.tasks.bind("expires_at", now),
    }
    if len(ask.stage_types) == 1:
        picked_params["type"] = ask.stage_types[0]
        one_type = sql["picked_one_type"]
        if limited:
            assert LIMITS_CHECK in one_type
            one_type = one_type.replace(LIMITS_CHECK, "")
        picked = conn.execute(one_type, picked_params).fetchall()
    else:
        picked_params["types"] = json.dumps(list(ask.stage_types))
        picked = conn.execute(sql["picked_types"], picked_params).fetchall()
    if not picked:
        return ClaimedRows()
    previous = dict(picked)
    tasks = t.tasks.rows(
        conn.execute(
            sql["claimed"],
            moved(t.tasks, TASK_CLAIMED, now, "m_")
            | {
                "expires": t.tasks.bind("lease_expires_at", now + ask.lease),
                "seconds": ask.lease.total_seconds(),
                "worker": ask.worker,
                "seqs": json.dumps(list(previous)),
            },
        )
    )
    for row in tasks:
        row["previous"] = TaskStatus(previous[row["seq"]])
    tasks.sort(key=lambda r: (r["priority_rank"], r["seq"]))  # RETURNING keeps no order
    events = [task_moved_event(_CLAIMS[row["previous"]], row, now, ask.principal) for row in tasks]
    starts = _bump_and_start(conn, tasks, now, ask.principal)
    _log(conn, events + starts)
    if ask.announce and starts:
        _announce(conn, starts)
    claimed = ClaimedRows(tasks, started=bool(starts))
    if ask.with_context:
        stage_ids = sorted({row["stage_id"] for row in tasks})
        claimed.stages = t.stages.rows(conn.execute(sql["stages"], _ids(stage_ids)))
        job_ids = sorted({row["job_id"] for row in claimed.stages})
        claimed.jobs = t.jobs.rows(conn.execute(sql["jobs"], _ids(job_ids)))
    return claimed


def _bump_and_start(
    conn: sqlite3.Connection, tasks: list[dict[str, Any]], now: datetime, principal: str | None
) -> list[dict[str, Any]]:
    """Bump each stage's summary, in stage id order; start those this claim is the first
    of, and their jobs. Answers the starts' event rows, stages then jobs."""
    sql, t = _sql(), _tables()
    counts: dict[uuid.UUID, Counter[str]] = {}
    for row in tasks:
        counts.setdefault(row["stage_id"], Counter())[summary_field(row["previous"])] += 1
    bound_now = t.stages.bind("update_time", now)
    starts: list[dict[str, Any]] = []
    started_jobs: list[uuid.UUID] = []
    for stage_id in sorted(counts):
        count = counts[stage_id]
        bound_id = t.stages.bind("id", stage_id)
        ((job_id, status, stage_type),) = conn.execute(
            sql["bumped"],
            {
                "pending": count["pending"],
                "retried": count["retried"],
                "claimed": count.total(),
                "now": bound_now,
                "id": bound_id,
            },
        ).fetchall()
        if status != STAGE_STARTED.source:
            continue
        conn.execute(
            sql["stage_started"],
            moved(t.stages, STAGE_STARTED, now, "m_")
            | {"now": bound_now, "id": bound_id, "unstarted": STAGE_STARTED.source},
        )
        job = t.stages.read("job_id", job_id)
        starts.append(
            STAGE_STARTED.event(job_id=job, entity_id=stage_id, now=now, principal=principal)
            | {"stage_type": stage_type}
        )
        if job not in started_jobs:
            started_jobs.append(job)
    for job in sorted(started_jobs):
        if conn.execute(
            sql["job_started"],
            moved(t.jobs, JOB_STARTED, now, "m_")
            | {"now": bound_now, "id": t.jobs.bind("id", job), "unstarted": JOB_STARTED.source},
        ).fetchall():
            starts.append(
                JOB_STARTED.event(job_id=job, entity_id=job, now=now, principal=principal)
            )
    return starts


def _log(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """The event rows, in order, as `services.history.insert_rows` writes them."""
    events = _tables().events
    conn.executemany(
        events.insert(EVENT_COLUMNS), [events.bound({c: r[c] for c in EVENT_COLUMNS}) for r in rows]
    )


def _announce(conn: sqlite3.Connection, starts: list[dict[str, Any]]) -> None:
    """The starts' lifecycle messages (`domain.announcements`), as outbox rows."""
    info: dict[str, Any] = {announcements.ANNOUNCING: True}
    announcements.moves(info, starts)
    outbox = _tables().outbox
    conn.executemany(
        outbox.insert(("routing_key", "payload", "created_at")),
        [
            outbox.bound({"routing_key": key, "payload": body, "created_at": at})
            for key, body, at in info.get(announcements.MESSAGES, ())
        ],
    )


def _ids(ids: list[uuid.UUID]) -> dict[str, str]:
    bind = _tables().stages.bind
    return {"ids": json.dumps([bind("id", u) for u in ids])}
