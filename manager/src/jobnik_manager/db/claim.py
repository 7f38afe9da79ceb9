"""The claim statement: the one statement on the hot path of every worker.

One UPDATE takes up to `limit` claimable tasks and starts their leases, whatever the
limit. Its inner SELECT reads the partial index `ix_tasks_claim`, which holds only
claimable tasks, in (stage_type, priority_rank, seq) order, so its cost does not grow
with finished history or with paused, waiting or delayed work. PostgreSQL skips rows
another claimer has locked; on SQLite the transaction already holds the write lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cache
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    ARRAY,
    Row,
    String,
    any_,
    bindparam,
    func,
    insert,
    literal,
    select,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from ..domain.moves import CLAIMS, EVENT_COLUMNS, TASK_CLAIMED, TASK_RECLAIMED
from . import first_claim
from .direct import DirectStatement
from .event_rows import task_moves
from .models import EVENTS, STAGES, TASKS, Task
from .types import UtcDateTime

TASK_COLUMNS = tuple(Task.__table__.c)
# Belt and braces: only a task waiting to run is ever claimed, whatever its flag says.
_WAITING_STATUSES = [str(m.source) for m in CLAIMS]
_WAITING = Task.status.in_(_WAITING_STATUSES)


async def claim_rows(
    s: AsyncSession,
    stage_types: Sequence[str],
    limit: int,
    *,
    now: datetime,
    lease: timedelta,
    worker: str | None,
) -> list[Any]:
    """SQLite: claim up to `limit` tasks of these types (best priority, then oldest):
    each row is the claimed task as it is now, plus `previous`, its status before the
    claim. (PostgreSQL claims with `claim_statement`, one statement of its own.)"""
    picked = select(Task.seq, Task.status.label("previous")).where(Task.claimable, _WAITING)
    if len(stage_types) == 1:
        # Equality keeps the plan a plain ordered index scan.
        picked = picked.where(Task.stage_type == stage_types[0])
    else:
        picked = picked.where(Task.stage_type.in_(stage_types))
    picked = picked.order_by(Task.priority_rank, Task.seq).limit(limit)
    # SQLite's RETURNING sees only the updated table; the write lock taken at BEGIN
    # keeps the two statements together.
    previous = {r.seq: r.previous for r in await s.execute(picked)}
    if not previous:
        return []
    updated = await s.execute(
        update(Task)
        .values(
            **TASK_CLAIMED.columns(now),
            # SQLite keeps a UUID as 32 hex digits.
            lease_id=func.lower(func.hex(func.randomblob(16))),
            lease_expires_at=now + lease,
            lease_seconds=lease.total_seconds(),
            worker=worker,
            progress=None,
            progress_message=None,
        )
        .where(Task.seq.in_(previous))
        .returning(*TASK_COLUMNS)
        .execution_options(synchronize_session=False)
    )
    rows = [_with_previous(r, previous[r.seq]) for r in updated]
    rows.sort(key=lambda r: (r.priority_rank, r.seq))  # RETURNING keeps no order
    return rows


def _with_previous(row: Row[Any], previous: str) -> Any:
    return SimpleNamespace(**row._mapping, previous=previous)


@cache
def claim_statement(single_type: bool, announce: bool) -> DirectStatement:
    """PostgreSQL: the whole claim as one statement, so it can run as a transaction of
    its own and hold the stage's summary row only while it runs.

    Data-modifying CTEs claim the tasks, bump their stages' summaries, start the stages
    this is the first claim of and their jobs (`db.first_claim`), and log every move;
    the rows are the claimed tasks with `previous` and `stage_started` (whether this
    claim started the task's stage). Binds `types` (one string when `single_type`, else
    a list), `n`, `now`, `expires`, `seconds`, `worker`, `principal`, and `time` (`now`
    as lifecycle messages spell it, written when `announce`).
    """
    now = bindparam("now", type_=UtcDateTime())
    # Equality keeps the plan a plain ordered index scan. Lists are bound as arrays
    # (`= ANY`, which is what PostgreSQL makes of an IN list), so the statement's text
    # is the same whatever their length.
    of_types = (
        Task.stage_type == bindparam("types")
        if single_type
        else Task.stage_type == any_(bindparam("types", type_=ARRAY(String())))
    )
    waiting = Task.status == any_(literal(_WAITING_STATUSES, ARRAY(String())))
    picked = select(Task.seq, Task.status.label("previous")).where(
        Task.claimable, waiting, of_types
    )
    chosen = (
        picked.order_by(Task.priority_rank, Task.seq)
        .limit(bindparam("n"))
        .with_for_update(skip_locked=True)
        .cte("picked")
    )
    claimed = (
        update(TASKS)
        .where(TASKS.c.seq == chosen.c.seq)
        .values(
            **TASK_CLAIMED.columns(now),
            lease_id=func.gen_random_uuid(),
            lease_expires_at=bindparam("expires", type_=UtcDateTime()),
            lease_seconds=bindparam("seconds"),
            worker=bindparam("worker"),
            progress=None,
            progress_message=None,
        )
        .returning(*TASKS.c, chosen.c.previous)
        .cte("claimed")
    )
    c = claimed.c
    counted = (
        select(
            c.stage_id,
            func.count().filter(c.previous == str(TASK_CLAIMED.source)).label("pending"),
            func.count().filter(c.previous == str(TASK_RECLAIMED.source)).label("retried"),
            func.count().label("claimed"),
        )
        .group_by(c.stage_id)
        .cte("counted")
    )
    locked = first_claim.locked_stages(counted)
    k = locked.c
    bumped = (
        update(STAGES)
        .where(STAGES.c.id == k.id)
        .values(
            pending=STAGES.c.pending - k.pending,
            retried=STAGES.c.retried - k.retried,
            in_progress=STAGES.c.in_progress + k.claimed,
            update_time=now,
            **first_claim.start_values(locked, now),
        )
        .returning(STAGES.c.id, STAGES.c.job_id, STAGES.c.type, first_claim.starting(locked))
        .cte("bumped")
    )
    started, extra = first_claim.start_rows(bumped, now, announce=announce)
    # One INSERT in this order (tasks, then stages, then jobs, as the session path logs
    # them): the order in which separate data-modifying CTEs run is not defined.
    moves = union_all(
        task_moves(claimed, CLAIMS, now, c.previous).add_columns(
            literal(0).label("rank"), c.priority_rank.label("k1"), c.seq.label("k2")
        ),
        started,
    ).cte("moves")
    m = moves.c
    logged = insert(EVENTS).from_select(
        EVENT_COLUMNS,
        select(*(m[name] for name in EVENT_COLUMNS)).order_by(m.rank, m.k1, m.k2, m.entity_id),
    )
    answer = (
        select(claimed, bumped.c.started.label("stage_started"))
        .join(bumped, bumped.c.id == c.stage_id)
        .add_cte(logged.cte("logged"))
        .order_by(c.priority_rank, c.seq)
    )
    for cte in extra:
        answer = answer.add_cte(cte)
    return DirectStatement.of(answer)
