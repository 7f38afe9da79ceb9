"""A stage type's flow: its tasks created, completed, failed and retried per minute over
a recent window, read from the event log.

The log has no index on time (the hottest insert would pay for it on every move), but
its key `seq` grows with time: the first event of the window is found by bisecting the
key (one primary-key probe a step, some thirty for a billion events), and the window is
then read as a range of the key, joined to the stages for their type. What is read is
the window's events, whatever the history before it; retention keeps the log's start
recent. An event whose replica's clock ran a moment behind may fall in the minute before
its neighbours' or, at the window's edge, out of it: a chart, not a ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, String, cast, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import Event, Stage, written, written_all
from ..domain.moves import Entity
from ..domain.statuses import TaskStatus

_COUNTED = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.RETRIED)


@dataclass(frozen=True, slots=True)
class Minute:
    start: datetime
    created: int = 0
    completed: int = 0
    failed: int = 0
    retried: int = 0


@dataclass(frozen=True, slots=True)
class Flow:
    since: datetime
    minutes: list[Minute]


async def flow(s: AsyncSession, stage_type: str, minutes: int) -> Flow:
    """The last `minutes` whole minutes and the current one, oldest first, each with the
    stage type's task moves in it (every minute listed, empty ones too)."""
    now = now_in(s)
    current = now.replace(second=0, microsecond=0)
    since = current - timedelta(minutes=minutes)
    counts: dict[datetime, dict[str, int]] = {}
    first = await _first_seq_since(s, since)
    if first is not None:
        # Counted per stage first, then the type's stages picked: an aggregate over the
        # window's rows by hash, where joining each row to its stage first had them
        # sorted (the planner cannot tell how many of a type's moves there are).
        created = Event.from_status.is_(None).label("created")
        minute = _minute_of(s).label("minute")
        per_stage = (
            select(Event.stage_id, minute, created, Event.to_status, func.count().label("n"))
            .where(
                Event.seq >= first,
                Event.time >= since,
                Event.entity == written(Entity.TASK),
                or_(Event.from_status.is_(None), Event.to_status.in_(written_all(_COUNTED))),
            )
            .group_by(Event.stage_id, minute, created, Event.to_status)
            .subquery()
        )
        moved = await s.execute(
            select(per_stage.c.minute, per_stage.c.created, per_stage.c.to_status)
            .add_columns(func.sum(per_stage.c.n))
            .join(Stage, Stage.id == per_stage.c.stage_id)
            .where(Stage.type == stage_type)
            .group_by(per_stage.c.minute, per_stage.c.created, per_stage.c.to_status)
        )
        for at, was_created, to_status, n in moved:
            tally = counts.setdefault(_minute_start(at), {})
            field = "created" if was_created else TaskStatus(to_status).value.lower()
            tally[field] = tally.get(field, 0) + int(n)
    steps = [since + timedelta(minutes=i) for i in range(minutes + 1)]
    return Flow(since=since, minutes=[Minute(at, **counts.get(at, {})) for at in steps])


def _minute_of(s: AsyncSession) -> ColumnElement[Any]:
    """The minute an event's time falls in: a timestamp on PostgreSQL (the offsets of
    every zone are whole minutes), 'YYYY-MM-DD HH:MM' text on SQLite, which keeps the
    time as such text (UTC) and more."""
    if s.get_bind().dialect.name == "postgresql":
        return func.date_trunc("minute", Event.time)
    return func.substr(cast(Event.time, String), 1, 16)


def _minute_start(at: datetime | str) -> datetime:
    if isinstance(at, str):
        return datetime.strptime(at, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    return at.astimezone(UTC)


async def _first_seq_since(s: AsyncSession, since: datetime) -> int | None:
    """The smallest key from which every event is at or after `since` (None when the
    log's last event is older): the smallest x whose first event at or after x is that
    recent, bisected over the keys the log holds."""
    low, high = (await s.execute(select(func.min(Event.seq), func.max(Event.seq)))).one()
    if high is None or not await _recent_from(s, high, since):
        return None
    while low < high:
        middle = (low + high) // 2
        if await _recent_from(s, middle, since):
            high = middle
        else:
            low = middle + 1
    return int(low)


async def _recent_from(s: AsyncSession, seq: int, since: datetime) -> bool:
    at = await s.scalar(select(Event.time).where(Event.seq >= seq).order_by(Event.seq).limit(1))
    return at is not None and at >= since
