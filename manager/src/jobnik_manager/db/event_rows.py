"""PostgreSQL: the event rows the hot path's statements write in SQL, column for column
the rows `domain.moves` declares (and `services.history` writes for the session path,
SQLite's)."""

from __future__ import annotations

from collections.abc import Sequence
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

from ..domain.moves import EVENT_COLUMNS, Entity, Move
from .models import EVENTS


def principal() -> BindParameter[str]:
    """The `principal` bind: the token name of who makes the change (NULL with
    authentication off), as `services.history` names it."""
    return bindparam("principal", type_=String())


def named(*values: ColumnElement[Any]) -> list[ColumnElement[Any]]:
    """An event row's values, in EVENT_COLUMNS order, labelled with their columns' names
    (so the rows of several selects can be put together)."""
    return [v.label(name) for v, name in zip(values, EVENT_COLUMNS, strict=True)]


def task_moves(
    moved: CTE, moves: Sequence[Move], now: ColumnElement[Any], previous: ColumnElement[Any]
) -> Select[Any]:
    """The event rows, in EVENT_COLUMNS order, of the tasks a data-modifying CTE moved:
    `moves` (to one target) as `Move.event` makes them; `previous` says which move each
    row made (its status before: a column the CTE carries, or the one move's source)."""
    (target,) = {str(m.target) for m in moves}
    assert all(m.entity is Entity.TASK for m in moves)
    m = moved.c
    return select(
        *named(
            m.job_id,
            literal(Entity.TASK.value),
            m.id,
            m.stage_id,
            m.id,
            previous,
            literal(target),
            m.attempts,
            m.lease_id,
            m.worker,
            null(),
            now,
            principal(),
        )
    )


def log_task_moves(
    moved: CTE, move: Move, now: ColumnElement[Any], *, order_by: tuple[ColumnElement[Any], ...]
) -> Insert:
    """Insert the event rows of `move`, made on the rows of `moved`, in this order."""
    rows = task_moves(moved, [move], now, literal(str(move.source))).order_by(*order_by)
    return insert(EVENTS).from_select(EVENT_COLUMNS, rows)
