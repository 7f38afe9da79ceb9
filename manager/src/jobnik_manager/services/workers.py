"""The workers view: who is claiming which stage types, when each was last seen and how
many tasks it holds, from what the manager knows already.

A named worker's claims are recorded (`Sightings.seen`): a worker new to this replica,
back after a minute, or claiming other types, at once; one seen again, at most once
every `RECORD_EVERY`, and then not by a statement of its own: its sighting waits in
memory and the claim that finds the oldest waiting one due writes them all, one upsert
of many rows. A thousand idle workers cost one statement every few seconds, not one
per claim. Its tasks in flight
come from the tasks themselves: each IN_PROGRESS task names its worker, and its lease
says when it last heard from it (a heartbeat renews the lease for `lease_seconds`). A
worker is listed while it was seen within the window, or holds a task whose lease has
not run out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database, acting_name, now_in
from ..db.models import Task, WorkerSighting
from ..db.upserts import insert_on
from ..domain.statuses import TaskStatus

RECORD_EVERY = timedelta(seconds=5)  # per worker and replica
# A worker not seen for this long is back: recorded at once, as a new one is (the
# workers view's window is a minute by default).
BACK_AFTER = timedelta(seconds=60)
FORGET_AFTER = timedelta(days=1)
# Workers remembered per replica before those unseen for BACK_AFTER are dropped (they
# would be recorded at once anyway); past it, the bar doubles with what is kept.
FORGET_RECORDS_FROM = 1_000


@dataclass(frozen=True, slots=True)
class WorkerView:
    name: str
    stage_types: list[str]
    principal: str | None
    first_seen: datetime | None
    last_seen: datetime
    in_flight: int


@dataclass(frozen=True, slots=True)
class Sighting:
    name: str
    stage_types: list[str]
    principal: str | None  # the token it claims with
    seen: datetime


class Sightings:
    """When this process last recorded each worker claiming each set of stage types (on
    the database's clock), and the sightings waiting to be written.

    Keyed by name and types: the Workers of one process share its name by default, each
    claiming types of its own, and one's claim must not count as another's change of
    types (written at once)."""

    def __init__(self) -> None:
        self._recorded: dict[tuple[str, tuple[str, ...]], datetime] = {}
        self._forget_from = FORGET_RECORDS_FROM
        # The oldest first.
        self._waiting: dict[tuple[str, tuple[str, ...]], Sighting] = {}

    async def seen(self, db: Database, worker: str | None, stage_types: Sequence[str]) -> None:
        if not worker:
            return  # an unnamed claimer (a v1 dequeue) has nothing to be listed by
        key = (worker, tuple(sorted(set(stage_types))))
        now = db.clock.now()
        last = self._recorded.get(key)
        if last is not None and now - last < RECORD_EVERY:
            return
        if len(self._recorded) >= self._forget_from:
            # Workers come and go (a name per process by default): keep those that would
            # not count as back. Dropping any other would record each of its claims at
            # once, a transaction apiece.
            self._recorded = {
                one: seen for one, seen in self._recorded.items() if now - seen < BACK_AFTER
            }
            self._forget_from = max(FORGET_RECORDS_FROM, 2 * len(self._recorded))
        self._recorded[key] = now
        sighting = Sighting(worker, list(key[1]), acting_name(), now)
        if last is None or now - last >= BACK_AFTER:
            # New here (or claiming other types), or back after a while: at once.
            self._waiting.pop(key, None)
            await db.transaction(lambda s: _record(s, [sighting]))
            return
        oldest = next(iter(self._waiting.values()), None)
        self._waiting.pop(key, None)  # its newer sighting replaces the one waiting
        self._waiting[key] = sighting
        if oldest is not None and now - oldest.seen >= RECORD_EVERY:
            waiting, self._waiting = _by_worker(self._waiting.values()), {}
            await db.transaction(lambda s: _record(s, waiting))


def _by_worker(sightings: Iterable[Sighting]) -> list[Sighting]:
    """One sighting per worker: the latest, claiming every type it was seen claiming."""
    merged: dict[str, Sighting] = {}
    for one in sorted(sightings, key=lambda one: one.seen):
        before = merged.get(one.name)
        types = one.stage_types if before is None else before.stage_types + one.stage_types
        merged[one.name] = Sighting(one.name, sorted(set(types)), one.principal, one.seen)
    return list(merged.values())


async def _record(s: AsyncSession, sightings: list[Sighting]) -> None:
    """Upsert these sightings, one statement (a worker's first sighting is its first
    seen; the rest move its last seen on)."""
    rows = [
        {
            "name": one.name,
            "stage_types": one.stage_types,
            "principal": one.principal,
            "first_seen": one.seen,
            "last_seen": one.seen,
        }
        for one in sorted(sightings, key=lambda one: one.name)  # one lock order
    ]
    # The rows as parameters, not in the statement: its text, compiled once, serves any
    # number of them.
    await s.execute(_upsert(s.get_bind().dialect.name), rows)


@functools.cache
def _upsert(dialect: str) -> Any:
    """The sightings' upsert on `dialect`'s database, built once (the construct's column
    collections cost more than running it)."""
    insert = insert_on(dialect, WorkerSighting)
    return insert.on_conflict_do_update(
        index_elements=[WorkerSighting.name],
        set_={
            "stage_types": insert.excluded.stage_types,
            "principal": insert.excluded.principal,
            "last_seen": insert.excluded.last_seen,
        },
    )


async def live_workers(db: Database, window: timedelta) -> list[WorkerView]:
    """The workers seen within `window` or holding a live lease, by name."""
    return await db.transaction(lambda s: _live(s, window))


@dataclass
class _Seen:
    stage_types: set[str] = field(default_factory=set)
    principal: str | None = None
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    in_flight: int = 0

    def saw(self, when: datetime) -> None:
        self.last_seen = when if self.last_seen is None else max(self.last_seen, when)


async def _live(s: AsyncSession, window: timedelta) -> list[WorkerView]:
    now = now_in(s)
    seen: dict[str, _Seen] = {}
    # Through the lease-expiry index: only tasks in flight, whose leases still run.
    held = await s.execute(
        select(Task.worker, Task.stage_type, Task.lease_expires_at, Task.lease_seconds).where(
            Task.status == TaskStatus.IN_PROGRESS,
            Task.lease_expires_at > now,
            Task.worker.is_not(None),
        )
    )
    for worker, stage_type, expires, lease_seconds in held:
        if worker is None or expires is None:
            continue  # (the statement excludes them; the types do not say so)
        one = seen.setdefault(worker, _Seen())
        one.stage_types.add(stage_type)
        one.in_flight += 1
        one.saw(min(expires - timedelta(seconds=lease_seconds or 0), now))
    # Those seen claiming lately, and what is known of those that hold tasks.
    sightings = await s.execute(
        select(WorkerSighting).where(
            or_(WorkerSighting.last_seen >= now - window, WorkerSighting.name.in_(list(seen)))
        )
    )
    for row in sightings.scalars():
        one = seen.setdefault(row.name, _Seen())
        one.stage_types.update(row.stage_types)
        one.principal, one.first_seen = row.principal, row.first_seen
        one.saw(row.last_seen)
    return [
        WorkerView(
            name=name,
            stage_types=sorted(one.stage_types),
            principal=one.principal,
            first_seen=one.first_seen,
            last_seen=one.last_seen or now,
            in_flight=one.in_flight,
        )
        for name, one in sorted(seen.items())
    ]


async def forget_gone(s: AsyncSession) -> int:
    """Delete the sightings of workers unseen for `FORGET_AFTER`."""
    result = await s.execute(
        delete(WorkerSighting).where(WorkerSighting.last_seen < now_in(s) - FORGET_AFTER)
    )
    return int(getattr(result, "rowcount", 0) or 0)
