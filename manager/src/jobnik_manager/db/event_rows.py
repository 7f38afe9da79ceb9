"""PostgreSQL: the event rows the hot path's statements write in SQL, column for column
the rows `services.history` builds in Python for the session path (SQLite's)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    CTE,
    BindParameter,
    ColumnElement,
    Insert,
    Select,
    String,
    bindparam,
    insert,
    literal,
    null,
    select,
)

from ..domain.statuses import TaskStatus
from .models import EVENTS

EVENT_COLUMNS = (
    "job_id",
    "entity",
    "entity_id",
    "stage_id",
    "task_id",
    "from_status",
    "to_status",
    "attempt",
    "lease_id",
    "worker",
    "reason",
    "time",
    "principal",
)


def principal() -> BindParameter[str]:
    """The `principal` bind: the token name of who makes the change (NULL with
    authentication off), as `services.history` names it."""
    return bindparam("principal", type_=String())


def named(*values: ColumnElement[Any]) -> list[ColumnElement[Any]]:
    """An event row's values, in EVENT_COLUMNS order, labelled with their columns' names
    (so the rows of several selects can be put together)."""
    return [v.label(name) for v, name in zip(values, EVENT_COLUMNS, strict=True)]


def task_moves(
    moved: CTE, previous: ColumnElement[Any], target: TaskStatus, now: ColumnElement[Any]
) -> Select[Any]:
    """The event rows, in EVENT_COLUMNS order, of the tasks a data-modifying CTE moved
    to `target`: the rows `services.history.task_row` builds."""
    m = moved.c
    return select(
        *named(
            m.job_id,
            literal("TASK"),
            m.id,
            m.stage_id,
            m.id,
            previous,
            literal(target.value),
            m.attempts,
            m.lease_id,
            m.worker,
            null(),
            now,
            principal(),
        )
    )


def log_task_moves(
    moved: CTE,
    previous: ColumnElement[Any],
    target: TaskStatus,
    now: ColumnElement[Any],
    *,
    order_by: tuple[ColumnElement[Any], ...],
) -> Insert:
    """Insert `task_moves` in this order."""
    rows = task_moves(moved, previous, target, now).order_by(*order_by)
    return insert(EVENTS).from_select(EVENT_COLUMNS, rows)
