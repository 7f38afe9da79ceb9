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

from ..domain.moves import TASK_COMPLETED
from ..domain.statuses import StageStatus
from .direct import DirectStatement
from .queries import queries, statement


@cache
def complete_statement() -> DirectStatement:
    """db/sql/complete.sql. Binds `ids`, `leases` (NULL for a report without a lease),
    `results` (JSON text or NULL) as arrays of equal length without repeated ids, `now`
    and `principal`."""
    constants = {
        "running": str(TASK_COMPLETED.source),
        "completed": str(TASK_COMPLETED.target),
        # The stage stays open: it is running, and its other tasks are not done.
        "stage_running": str(StageStatus.IN_PROGRESS),
    }
    return statement(queries("complete")["complete"], constants)
