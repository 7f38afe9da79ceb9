"""Workers' reports on their tasks, and the same settlement when a lease expires.

A batch of N reports costs a constant number of statements: one SELECT ... FOR UPDATE
of the N tasks (in id order), one executemany UPDATE, one multi-row event INSERT, one
summary UPDATE per stage, and a cascade only for a stage the batch may have finished.
Each report is decided on its own by the pure rules in `domain`, so one refused report
does not stop the others.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..db.claim import TASK_COLUMNS
from ..db.complete import complete_statement
from ..db.engine import Database, acting_name, now_in, principal_in
from ..db.models import TASKS, Task
from ..db.sqlite_complete import Completion
from ..db.sqlite_complete import complete as complete_on_sqlite
from ..domain import observations
from ..domain.errors import DomainError, LeaseLost, TaskNotFound
from ..domain.leases import lease_is_live
from ..domain.moves import Move, task_move
from ..domain.progress import stage_outcome
from ..domain.retry import RetryPolicy
from ..domain.statuses import StageStatus, TaskStatus
from ..domain.tasks import ReportOutcome, apply_report
from ..domain.transitions import Actor
from . import summaries
from .cascade import settle_stage
from .claimability import jobs_allowing_claims, open_tasks
from .claims import start_stages
from .history import insert_rows, task_event
from .loading import load_stage

_TASKS = TASKS
# The columns a settlement writes; every row of the executemany names all of them.
_WRITTEN = (
    "status",
    "claimable",
    "attempts",
    "update_time",
    "end_time",
    "not_before",
    "reason",
    "result",
    "progress",
)
_UPDATE = (
    update(_TASKS)
    .where(_TASKS.c.seq == bindparam("w_seq"))
    .values({c: bindparam(f"w_{c}") for c in _WRITTEN})
)


@dataclass(frozen=True, slots=True)
class Report:
    """What a worker says of its task. `status` RETRIED means "retry later"."""

    status: TaskStatus
    lease_id: uuid.UUID | None = None
    result: dict[str, Any] | None = None
    reason: str | None = None
    retryable: bool = True
    retry_after: timedelta | None = None
    error_type: str | None = None
    # The system's report of a lease that ran out: the attempt failed when it did, so
    # that is when its retry delay began, however late the reaper noticed.
    at_lease_end: bool = False


# A settled task: the task's columns by name, as the settlement left them.
TaskView = SimpleNamespace


async def settle(
    db: Database, items: Sequence[tuple[uuid.UUID, Report]]
) -> list[TaskView | DomainError]:
    """Settle reports, each transaction as short as it can be: the completions that
    leave their stage open go through a transaction of their own on the driver (one
    statement on PostgreSQL, `db.complete`; a few on SQLite's writer thread,
    `db.sqlite_complete`); everything else, and anything that left, goes through
    `settle_reports` in one transaction."""
    began = time.perf_counter()
    replayed: list[datetime] = []
    answers = await _complete_fast(db, items, replayed)
    rest = [i for i in range(len(items)) if i not in answers]
    if rest:
        at = replayed[0] if replayed else None
        settled = await db.transaction(
            lambda s: settle_reports(s, [items[i] for i in rest], replayed_at=at)
        )
        answers.update(zip(rest, settled, strict=True))
        if at is not None:
            _count_replayed(db, [items[i] for i in rest], settled, at)
    db.committed({observations.REPORT_TOOK: time.perf_counter() - began})
    return [answers[i] for i in range(len(items))]


def _count_replayed(
    db: Database,
    items: Sequence[tuple[uuid.UUID, Report]],
    answers: Sequence[TaskView | DomainError],
    at: datetime,
) -> None:
    """Count the completions of a completion statement run again after its connection
    broke: the first run committed them, and its answer, never read, counted nothing.
    The full path answers them as repeated completions, ended at the statement's own
    time `at` (under the report's lease, if it names one); a repeat of a completion
    counted before ended at another time."""
    done: dict[str, Any] = {}
    for (_, r), task in zip(items, answers, strict=True):
        if not isinstance(task, DomainError) and _completed_by_replay(task, r, at):
            observations.settled(done, task, TaskStatus.COMPLETED, task.end_time, task.start_time)
    if done:
        db.committed(done)


def _completed_by_replay(task: TaskView, r: Report, at: datetime | None) -> bool:
    """Whether `r`'s completion statement, run again at `at` after its connection broke,
    is what completed `task` the first time: the task ended at the statement's own time,
    under the report's lease if it names one."""
    return (
        at is not None
        and r.status is TaskStatus.COMPLETED
        and task.status == TaskStatus.COMPLETED
        and task.end_time == at
        and (r.lease_id is None or task.lease_id == r.lease_id)
    )


async def _complete_fast(
    db: Database, items: Sequence[tuple[uuid.UUID, Report]], replayed: list[datetime]
) -> dict[int, TaskView | DomainError]:
    """The completions the fast statement settled, by item. `replayed` gets the
    statement's time when it ran again after its connection broke."""
    first: dict[uuid.UUID, int] = {}
    for i, (task_id, r) in enumerate(items):
        if r.status is TaskStatus.COMPLETED:
            first.setdefault(task_id, i)  # a repeated id is left to the full path
    if not first:
        return {}
    if db.is_sqlite:
        rows = await _complete_sqlite(db, [items[i] for i in first.values()])
    else:
        rows = await _complete_postgres(db, items, first, replayed)
    if rows:
        done: dict[str, Any] = {}
        for row in rows:
            observations.settled(done, row, TaskStatus.COMPLETED, row.end_time, row.start_time)
        db.committed(done)
    return {first[row.id]: row for row in rows}


async def _complete_sqlite(db: Database, items: list[tuple[uuid.UUID, Report]]) -> list[TaskView]:
    completions = [Completion(task_id, r.lease_id, r.result) for task_id, r in items]
    principal = acting_name()

    def run(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        # The time read with the write lock held, as the statements run.
        return complete_on_sqlite(conn, completions, db.clock.now(), principal)

    return [SimpleNamespace(**row) for row in await db.sqlite_direct(run)]


async def _complete_postgres(
    db: Database,
    items: Sequence[tuple[uuid.UUID, Report]],
    first: dict[uuid.UUID, int],
    replayed: list[datetime],
) -> list[TaskView]:
    now = db.clock.now()
    params = {
        "ids": list(first),
        "leases": [items[i][1].lease_id for i in first.values()],
        "results": [_json_text(items[i][1].result) for i in first.values()],
        "now": now,
        "principal": acting_name(),
    }
    # Replayed after a broken connection: a completion that ran finds its tasks no longer
    # IN_PROGRESS the second time and changes nothing; they go to the full path, which
    # counts them (`_count_replayed`).
    done_rows = await db.direct(
        complete_statement(), params, replay_safe=True, replaying=lambda: replayed.append(now)
    )
    return [SimpleNamespace(**row) for row in done_rows]


def _json_text(result: dict[str, Any] | None) -> str | None:
    return None if result is None else json.dumps(result)


async def settle_reports(
    s: AsyncSession,
    items: Sequence[tuple[uuid.UUID, Report]],
    now: datetime | None = None,
    replayed_at: datetime | None = None,
) -> list[TaskView | DomainError]:
    """Settle each report; answers, in order, the task as settled or why it was refused.
    `replayed_at` is the time of a completion statement that ran again after its
    connection broke: a task it completed is answered as completed, lease or not."""
    now = now or now_in(s)
    ids = sorted({task_id for task_id, _ in items})
    rows = await s.execute(
        select(*TASK_COLUMNS).where(_TASKS.c.id.in_(ids)).order_by(_TASKS.c.id).with_for_update()
    )
    tasks = {row.id: SimpleNamespace(**row._mapping) for row in rows}
    answers: list[TaskView | DomainError] = []
    principal = principal_in(s)
    changed: dict[uuid.UUID, TaskView] = {}
    events: list[dict[str, Any]] = []
    moved: list[tuple[uuid.UUID, TaskStatus, TaskStatus]] = []
    reopened: list[TaskView] = []
    for task_id, r in items:
        task = tasks.get(task_id)
        if task is None:
            answers.append(TaskNotFound())
            continue
        try:
            outcome = _decide(task, r, now, replayed_at)
        except DomainError as exc:
            answers.append(exc)
            continue
        answers.append(task)
        if outcome is None:
            continue  # a repeated completion: answered as it stands
        previous = task.status
        move = task_move(previous, outcome.status, Actor.USER)
        _apply(task, r, move, outcome, now)
        if task.status is TaskStatus.RETRIED and task.not_before is None:
            reopened.append(task)
        changed[task_id] = task
        moved.append((task.stage_id, previous, outcome.status))
        events.append(task_event(task, move, now, principal, task.reason))
        if previous is TaskStatus.IN_PROGRESS:
            observations.settled(s.info, task, r.status, now, task.start_time)
    if not changed:
        return answers
    await s.execute(
        _UPDATE,
        [{"w_seq": t.seq, **{f"w_{c}": getattr(t, c) for c in _WRITTEN}} for t in changed.values()],
    )
    if reopened:
        await _reopen(s, reopened, now)
    await insert_rows(s, events)
    for stage in await summaries.bump(s, summaries.moves(moved), now):
        # A stage whose turn has not come (CREATED, WAITING) waits for it, whatever its
        # tasks: cancelling them all does not finish it out of turn.
        ending = stage_outcome(stage.summary, stage.allowed_failures)
        if not stage.status.is_active or ending is None:
            continue
        ran = stage.summary.completed + stage.summary.failed
        if stage.status is StageStatus.PENDING and ran:
            # Claims start their stage in their own transaction, but those of a manager
            # of an earlier version (during an upgrade) committed before the start (a
            # stage whose tasks were all cancelled before any ran completes unstarted).
            await start_stages(s, [stage.id], [stage.job_id], now)
        await settle_stage(s, await load_stage(s, stage.id, lock=True), now)
    return answers


def _decide(
    task: TaskView, r: Report, now: datetime, replayed_at: datetime | None = None
) -> ReportOutcome | None:
    """The outcome of `r` for `task`, None when it repeats a completion, or an error."""
    current = task.status
    # A leased one is recognised by its lease, below.
    if r.lease_id is None and _completed_by_replay(task, r, replayed_at):
        return None  # completed by this report's own statement, whose answer was lost
    if r.lease_id is not None and not lease_is_live(
        current, task.lease_id, task.lease_expires_at, r.lease_id, now
    ):
        if (
            r.status is TaskStatus.COMPLETED
            and current is TaskStatus.COMPLETED
            and task.lease_id == r.lease_id
        ):
            return None  # the answer to the first report was lost; say it again
        raise LeaseLost()
    return apply_report(
        current,
        r.status,
        attempts=task.attempts,
        max_attempts=task.max_attempts,
        retryable=r.retryable and _policy_retries(task, r.error_type),
    )


def _apply(task: TaskView, r: Report, move: Move, outcome: ReportOutcome, now: datetime) -> None:
    failed_at = task.lease_expires_at if r.at_lease_end and task.lease_expires_at else now
    for column, value in move.columns(now).items():
        setattr(task, column, value)
    task.attempts = outcome.attempts
    if outcome.status is TaskStatus.COMPLETED:
        task.result = r.result
        task.reason = None
        task.progress = 100
    elif outcome.status is TaskStatus.ABORTED:
        task.reason = r.reason or SystemReason.CANCELLED_BY_USER
    else:
        task.reason = r.reason or r.error_type
    if move.final:  # a cancelled task may have been waiting to be claimed, or due
        task.not_before = None
        return
    delay = r.retry_after if r.status is TaskStatus.RETRIED else _policy_delay(task, outcome)
    if delay is not None and delay > timedelta(0) and failed_at + delay > now:
        task.not_before = failed_at + delay  # opened by the maintenance loop when due


async def _reopen(s: AsyncSession, tasks: list[TaskView], now: datetime) -> None:
    """Retries due now are claimable again if their job lets tasks be claimed."""
    open_jobs = await jobs_allowing_claims(s, (t.job_id for t in tasks))
    ids = [t.id for t in tasks if t.job_id in open_jobs]
    if ids:
        await open_tasks(s, [TASKS.c.id.in_(ids)], now)


def _policy_delay(task: TaskView, outcome: ReportOutcome) -> timedelta | None:
    policy = RetryPolicy.from_json(task.retry_policy)
    if policy is None or outcome.status is not TaskStatus.RETRIED:
        return None
    return policy.delay_after(outcome.attempts, random.random())


def _policy_retries(task: TaskView, error_type: str | None) -> bool:
    policy = RetryPolicy.from_json(task.retry_policy)
    return policy is None or policy.retries(error_type)


async def expire_leases(s: AsyncSession, task_ids: Sequence[uuid.UUID], now: datetime) -> None:
    """These leases ran out (the caller holds the tasks' locks): failed attempts."""
    expired = Report(TaskStatus.FAILED, reason=SystemReason.LEASE_EXPIRED, at_lease_end=True)
    await settle_reports(s, [(task_id, expired) for task_id in task_ids], now)


async def expire_lease_if_due(s: AsyncSession, task_id: uuid.UUID, *, wait: bool = False) -> bool:
    """The reaper's settlement of one task, now rather than at the next tick: when its
    lease ran out and no one else holds it (`wait`: once whoever holds it is done, so
    that a read after it sees the task settled, by this or by the reaper). Whether it
    did."""
    now = now_in(s)
    due = await s.execute(
        select(Task.id)
        .where(
            Task.id == task_id,
            Task.status == TaskStatus.IN_PROGRESS,
            Task.lease_expires_at < now,
        )
        .with_for_update(skip_locked=not wait)
    )
    if due.first() is None:
        return False
    await expire_leases(s, [task_id], now)
    return True
