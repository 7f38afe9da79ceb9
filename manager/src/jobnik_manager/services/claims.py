"""Claiming tasks (dequeue and batch claim): each claim takes a lease.

A batch of any size costs the same statements, in one transaction of its own: on
PostgreSQL one statement (db/sql/claim.sql); on SQLite the claim UPDATE, one multi-row
event INSERT, one summary UPDATE per stage, and the start of a stage and its job only on
the first claim of that stage, run together on the writer's thread (`db.sqlite_claim`).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import func, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.claim import (
    claim_answer,
    claim_statement,
    claimed_context,
    context_statement,
    stages_and_jobs,
)
from ..db.engine import Database, acting_name, principal_in
from ..db.models import Job, Stage
from ..db.records import detached
from ..db.sqlite_claim import ClaimAsk, ClaimedRows
from ..db.sqlite_claim import claim as sqlite_claim
from ..domain import observations
from ..domain.announcements import ANNOUNCED, announcing
from ..domain.leases import DEFAULT_LEASE
from ..domain.moves import JOB_STARTED, STAGE_STARTED
from .history import insert_rows
from .stage_type_limits import claim_limited_postgres, claim_limited_sqlite


@dataclass(frozen=True, slots=True)
class Claimed:
    """Claimed rows (each holds the task's columns) and, when asked for, their stages
    and jobs as they stand once the claim has started them."""

    rows: list[Any]
    stages: list[Stage] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    # When a stage type's limit held tasks back: seconds until it may let more out.
    retry_after: float | None = None


async def claim(
    db: Database,
    stage_types: Sequence[str],
    *,
    limit: int = 1,
    lease: timedelta | None = None,
    worker: str | None = None,
    with_context: bool = False,
) -> Claimed:
    """Claim up to `limit` tasks of these types (highest job priority, then oldest), each
    under a lease, in a transaction of its own.

    On PostgreSQL the claim, with the start of the stages and jobs it is the first
    claim of, is one statement committed on its own, so the stage's summary row is
    locked only while it runs; the context `with_context` asks for comes in its answer
    (a limited type's stages from a second statement).
    """
    began = time.perf_counter()
    # Its `now` is stamped again when the claim runs: the lease runs from then.
    ask = ClaimAsk(
        tuple(stage_types),
        limit,
        db.clock.now(),
        lease or DEFAULT_LEASE,
        worker,
        acting_name(),
        with_context,
        announcing(db.info),
    )
    claimed = await (_claim_sqlite(db, ask) if db.is_sqlite else _claim_postgres(db, ask))
    info: dict[str, Any] = {
        observations.CLAIM_TOOK: (",".join(stage_types), time.perf_counter() - began)
    }
    observations.claimed(info, claimed.rows)
    db.committed(info)
    return claimed


async def _claim_sqlite(db: Database, ask: ClaimAsk) -> Claimed:
    def run(conn: sqlite3.Connection) -> tuple[ClaimedRows, float | None]:
        # The time read with the write lock held.
        now_ask = replace(ask, now=db.clock.now())
        claimed = sqlite_claim(conn, now_ask)
        left = ask.limit - len(claimed.tasks)
        if left <= 0:
            return claimed, None
        # Then the limited types among them, each within its limit.
        more, retry_after = claim_limited_sqlite(conn, replace(now_ask, limit=left))
        claimed.tasks += more.tasks
        claimed.stages += more.stages
        claimed.jobs += more.jobs
        claimed.started = claimed.started or more.started
        return claimed, retry_after

    claimed, retry_after = await db.sqlite_direct(run)
    if ask.announce and claimed.started:
        db.committed({ANNOUNCED: True})
    rows = [SimpleNamespace(**r) for r in claimed.tasks]
    if not (ask.with_context and rows):
        return Claimed(rows, retry_after=retry_after)
    jobs = {r["id"]: r for r in claimed.jobs}  # a job of two limited types comes twice
    # Only answered: the models' attributes, without SQLAlchemy's instrumentation.
    stages = [detached(Stage, r) for r in claimed.stages]
    return Claimed(rows, stages, [detached(Job, r) for r in jobs.values()], retry_after)


async def _claim_postgres(db: Database, ask: ClaimAsk) -> Claimed:
    stage_types = ask.stage_types
    single = len(stage_types) == 1
    taken = ask.lease

    def params() -> dict[str, Any]:
        # Read once a connection is in hand: the lease runs from when the claim runs,
        # not from before a wait for a connection (opening one can take seconds).
        now = db.clock.now()
        return {
            "types": stage_types[0] if single else list(stage_types),
            "n": ask.limit,
            "now": now,
            "expires": now + taken,
            "seconds": taken.total_seconds(),
            "worker": ask.worker,
            "principal": ask.principal,
            "time": now.isoformat(),
        }

    # Not durable: a claim a crash loses leaves its tasks as they were, to be claimed
    # again (their claimer's report is then refused as under a lost lease), and every
    # report is durable and so commits after it. Claims and reports of a stage then
    # wait for its summary row only while a claim runs, not while its WAL flushes (a
    # first claim a crash loses takes its starts with it: they happen again, announced
    # again, at the next claim). Never replayed after a broken connection: a claim that
    # ran but lost its answer, run again, would take more tasks and strand the first.
    # Asked for, the context comes in the same answer: no second round trip.
    statement = claim_statement(single, ask.announce, with_context=ask.with_context)
    records = await db.direct(statement, params, durable=False, replay_safe=False)
    claimed, limited = claim_answer(records)
    retry_after = None
    if len(claimed) < ask.limit:  # then the limited types among them, within their limits
        for stage_type in limited:
            left = ask.limit - len(claimed)
            if left <= 0:
                break
            more = await claim_limited_postgres(db, stage_type, left, params(), ask.announce)
            claimed += more.rows
            if more.retry_after is not None:
                retry_after = min(retry_after or more.retry_after, more.retry_after)
    # Namespaces of the columns, as SQLite's claims answer.
    rows = [SimpleNamespace(**r) for r in claimed]
    if ask.announce and any(r.stage_started for r in rows):
        db.committed({ANNOUNCED: True})
    if not (ask.with_context and rows):
        return Claimed(rows, retry_after=retry_after)
    stages, jobs = claimed_context(records)
    unread = {r.stage_id for r in rows} - {st.id for st in stages}
    if unread:  # the stages of tasks a limited type's claim took
        more_stages, more_jobs = stages_and_jobs(
            await db.direct(context_statement(), {"stage_ids": sorted(unread)}, replay_safe=True)
        )
        known = {j.id for j in jobs}
        stages = sorted(stages + more_stages, key=lambda st: st.id)
        jobs += [j for j in more_jobs if j.id not in known]
    return Claimed(rows, stages, jobs, retry_after=retry_after)


async def start_stages(
    s: AsyncSession, stage_ids: list[uuid.UUID], job_ids: list[uuid.UUID], now: datetime
) -> None:
    """First claims start their stages and jobs; those already started are left alone."""
    stage_ids, job_ids = sorted(set(stage_ids)), sorted(set(job_ids))
    principal = principal_in(s)
    started_stages = await s.execute(
        update(Stage)
        .where(Stage.id.in_(stage_ids), Stage.status == STAGE_STARTED.source)
        .values(**STAGE_STARTED.columns(now), start_time=func.coalesce(Stage.start_time, now))
        .returning(Stage.id, Stage.job_id, Stage.type)
        .execution_options(synchronize_session=False)
    )
    rows = [
        STAGE_STARTED.event(job_id=r.job_id, entity_id=r.id, now=now, principal=principal)
        | {"stage_type": r.type}
        for r in started_stages
    ]
    started_jobs = await s.execute(
        update(Job)
        .where(Job.id.in_(job_ids), Job.status == JOB_STARTED.source)
        .values(**JOB_STARTED.columns(now), start_time=func.coalesce(Job.start_time, now))
        .returning(Job.id)
        .execution_options(synchronize_session=False)
    )
    rows += [
        JOB_STARTED.event(job_id=job_id, entity_id=job_id, now=now, principal=principal)
        for job_id in started_jobs.scalars()
    ]
    await insert_rows(s, rows)
