"""The fake manager's one source of time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """The fake manager's time: the real time, moved on by every `advance`.

    Leases, retry delays, time limits and `notBefore` are measured on it, so a test lets
    a lease or a retry delay run out by advancing the clock past it instead of
    sleeping: the manager settles what ran out before it answers its next request.
    What waits in real time is only what the client does (a long-polling claim, `wait`).

    `frozen`: the time stands still but for `advance`, so that what a test drives on a
    clock of its own (a Worker's `clock`) runs out on both at the same moment, however
    slowly the machine runs.
    """

    def __init__(self, *, frozen: bool = False) -> None:
        self._frozen_at = datetime.now(UTC) if frozen else None
        self._offset = timedelta(0)
        # How many times it was moved: the manager's cue to settle what ran out.
        self._moves = 0

    def now(self) -> datetime:
        """The fake manager's current time (UTC)."""
        return (self._frozen_at or datetime.now(UTC)) + self._offset

    def advance(self, by: timedelta | float) -> None:
        """Move the clock forward by `by` (a timedelta, or seconds)."""
        step = by if isinstance(by, timedelta) else timedelta(seconds=by)
        if step < timedelta(0):
            raise ValueError("the clock only moves forward")
        self._offset += step
        self._moves += 1
