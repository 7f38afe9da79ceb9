"""The manager's time, from one injectable place.

Every timestamp a change writes, every lease and retry delay it checks, comes from the
`Clock` its `Database` holds (`db.engine.now_in` in a transaction, `Database.clock`
outside one); the statements bind that time, the database's own clock is never read. So
tests run on a `ManualClock` and move it on instead of sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The real time."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to: for tests."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)
        if self._now.tzinfo is None:
            raise ValueError("a ManualClock starts at an aware datetime")

    def now(self) -> datetime:
        return self._now

    def advance(self, by: float | timedelta) -> None:
        """Move the clock forward by `by` (seconds, or a timedelta)."""
        step = by if isinstance(by, timedelta) else timedelta(seconds=by)
        if step < timedelta(0):
            raise ValueError("the clock only moves forward")
        self._now += step
