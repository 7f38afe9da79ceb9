"""PostgreSQL: completions that leave their stage open, settled by one statement.

Most reports say COMPLETED and leave other tasks of their stage unfinished: nothing
cascades from them but the summary. For those, one statement locks the tasks (in id
order), bumps each stage's summary and percentage, settles the tasks and logs them, so
it can run as a transaction of its own and hold the hot stage row only while it runs.

A stage the batch would finish, a stage not IN_PROGRESS, and a task whose lease is not
live are left untouched (not returned); the caller settles those in a full transaction
with the cascade and the usual answers.
"""

from __future__ import annotations

from functools import cache

from sqlalchemy import (
    ARRAY,
    JSON,
    Text,
    Uuid,
    and_,
    bindparam,
    cast,
    column,
    func,
    or_,
    select,
    update,
)

from ..domain.moves import TASK_COMPLETED
from ..domain.statuses import StageStatus, TaskStatus
from ..domain.summary import COUNTERS, summary_field
from .direct import DirectStatement
from .event_rows import log_task_moves
from .models import STAGES, TASKS
from .types import UtcDateTime

_OPEN = tuple(summary_field(status) for status in TaskStatus if not status.is_final)


@cache
def complete_statement() -> DirectStatement:
    """Bind `ids`, `leases` (NULL for a report without a lease), `results` (JSON text or
    NULL) as arrays of equal length without repeated ids, and `now`."""
    now = bindparam("now", type_=UtcDateTime())
    v = (
        func.unnest(
            bindparam("ids", type_=ARRAY(Uuid())),
            bindparam("leases", type_=ARRAY(Uuid())),
            bindparam("results", type_=ARRAY(Text())),
        )
        .table_valued(column("id", Uuid()), column("lease_id", Uuid()), column("result", Text()))
        .render_derived(name="v", with_types=False)
    )
    valid = (
        select(TASKS.c.seq, TASKS.c.stage_id, v.c.result)
        .join(v, TASKS.c.id == v.c.id)
        .where(
            # Not `status = ...`: that matches the partial index of running tasks, which
            # the planner then scans whole (every task in flight) to join the batch's
            # ids, when looking each id up by its key is what a batch wants.
            func.coalesce(TASKS.c.status, "") == str(TASK_COMPLETED.source),
            or_(
                v.c.lease_id.is_(None),
                and_(TASKS.c.lease_id == v.c.lease_id, TASKS.c.lease_expires_at > now),
            ),
        )
        .order_by(TASKS.c.id)
        .with_for_update(of=TASKS)
        .cte("valid")
    )
    counted = (
        select(valid.c.stage_id, func.count().label("n")).group_by(valid.c.stage_id).cte("counted")
    )
    n = counted.c.n
    st = STAGES.c
    total = sum((st[c] for c in COUNTERS[1:]), st[COUNTERS[0]])
    still_open = sum((st[c] for c in _OPEN[1:]), st[_OPEN[0]])
    bumped = (
        update(STAGES)
        .where(
            st.id == counted.c.stage_id,
            st.status == StageStatus.IN_PROGRESS.value,
            still_open - n > 0,
        )
        .values(
            in_progress=st.in_progress - n,
            completed=st.completed + n,
            # domain.summary.percentage: floor(100 * completed / total); total is unchanged.
            percentage=(100 * (st.completed + n)) / total,
            update_time=now,
        )
        .returning(st.id)
        .cte("bumped")
    )
    done = (
        update(TASKS)
        .where(TASKS.c.seq == valid.c.seq, valid.c.stage_id == bumped.c.id)
        .values(
            **TASK_COMPLETED.columns(now),
            result=cast(valid.c.result, JSON()),
            reason=None,
            progress=100,
        )
        .returning(*TASKS.c)
        .cte("done")
    )
    logged = log_task_moves(done, TASK_COMPLETED, now, order_by=(done.c.id,))
    return DirectStatement.of(select(done).add_cte(logged.cte("logged")))
