"""Schedules: when a named schedule makes its next job, and what a tick that finds runs
due does about them. Pure: the times come in, the decision goes out.

A schedule is a cron expression read in an IANA time zone (5 fields, or 6 with seconds
first; `@hourly` and the other `@` names too), or a fixed interval counted from its
creation. A tick that finds the schedule due makes one job for the latest time due and
moves the schedule to its first time after now, so a run is never made twice, and after
a manager was down for several times at most one is made late ("catch up one"); with
`missedRuns: skip`, a time that passed more than `GRACE` ago makes none.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import cache

from croniter import croniter

from .errors import RuleViolation

# How late a run may be made under `missedRuns: skip` (a tick comes every second or so).
GRACE = timedelta(seconds=30)
MIN_INTERVAL = timedelta(seconds=1)
MAX_INTERVAL = timedelta(days=366)
NAME = re.compile(r"[a-z0-9][a-z0-9.\-]*")


class Overlap(StrEnum):
    """When a run comes while the schedule's last job is not final yet."""

    ALLOW = "allow"  # make it anyway
    SKIP = "skip"  # make none this time


class Missed(StrEnum):
    """What a tick does with times that passed while no manager was running."""

    ONE = "one"  # one job for the latest of them, at once
    SKIP = "skip"  # none for a time more than GRACE ago


@dataclass(frozen=True, slots=True)
class Timing:
    """When a schedule runs: `cron` in `timezone`, or every `interval`."""

    cron: str | None
    interval: timedelta | None
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.interval is None):
            raise _bad("a schedule has a cron expression or an interval (intervalSeconds), one")
        if self.cron is not None and not _valid_cron(self.cron):
            raise _bad(
                f"{self.cron!r} is not a cron expression: 5 fields (minute hour day month "
                "weekday), 6 with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly"
            )
        if self.interval is not None and not MIN_INTERVAL <= self.interval <= MAX_INTERVAL:
            raise _bad("intervalSeconds must be between 1 and 31,622,400 (366 days)")
        if not _known_zone(self.timezone):
            raise _bad(
                f"{self.timezone!r} is not an IANA time zone name such as Europe/Berlin or UTC "
                "(offsets and abbreviations are not accepted)"
            )

    def first_after(self, t: datetime, anchor: datetime) -> datetime:
        """The schedule's first time strictly after `t`; an interval counts its times
        from `anchor` (its first time)."""
        if self.interval is not None:
            if t < anchor:
                return anchor
            steps = (t - anchor) // self.interval + 1
            return anchor + steps * self.interval
        assert self.cron is not None
        local = t.astimezone(zoneinfo.ZoneInfo(self.timezone))
        following: datetime = _cron(self.cron, local).get_next(datetime)
        return following.astimezone(UTC)

    def last_until(self, now: datetime, anchor: datetime) -> datetime:
        """The schedule's last time at or before `now`."""
        if self.interval is not None:
            return anchor + ((now - anchor) // self.interval) * self.interval
        assert self.cron is not None
        local = now.astimezone(zoneinfo.ZoneInfo(self.timezone))
        # croniter's get_prev is strictly before; a time exactly at `now` counts.
        if _cron(self.cron, local - timedelta(microseconds=1)).get_next(datetime) == local:
            return now
        previous: datetime = _cron(self.cron, local).get_prev(datetime)
        return previous.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Fire:
    """A tick's decision for a due schedule: make a job for `run_at` (or not, and why),
    and next look at `next_run_at`."""

    run_at: datetime
    make: bool
    skipped_because: str | None
    next_run_at: datetime


def decide(
    timing: Timing,
    due: datetime,
    now: datetime,
    anchor: datetime,
    missed: Missed,
    overlap: Overlap,
    last_job_running: bool,
) -> Fire:
    """What a tick at `now` does with a schedule whose next time, `due`, has come."""
    # After a downtime several times may have passed: the latest stands for them all.
    run_at = max(due, timing.last_until(now, anchor))
    following = timing.first_after(now, anchor)
    if missed is Missed.SKIP and now - run_at > GRACE:
        return Fire(run_at, False, "missed", following)
    if overlap is Overlap.SKIP and last_job_running:
        return Fire(run_at, False, "overlap", following)
    return Fire(run_at, True, None, following)


def check_name(name: str) -> None:
    if not (1 <= len(name) <= 100 and NAME.fullmatch(name)):
        raise _bad(
            "a schedule's name has 1 to 100 characters: lower-case letters, digits, '-' and "
            "'.', starting with a letter or digit"
        )


def _bad(message: str) -> RuleViolation:
    return RuleViolation(message, code="VALIDATION_ERROR")


_NAMED = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _fields(expression: str) -> int:
    return len(expression.split())


@cache
def _valid_cron(expression: str) -> bool:
    if len(expression) > 200 or "\x00" in expression:
        return False
    if expression.startswith("@"):
        return expression in _NAMED
    if _fields(expression) not in (5, 6):
        return False
    try:
        return bool(croniter.is_valid(expression, second_at_beginning=True))
    except Exception:  # croniter raises more than its documented errors on odd input
        return False


def _cron(expression: str, start: datetime) -> croniter:
    return croniter(expression, start, second_at_beginning=_fields(expression) == 6)


@cache
def _known_zone(name: str) -> bool:
    if name == "UTC":
        return True
    # IANA area/location names only: "EST", "GMT+5" or "Etc/GMT-3" fix an offset and
    # miss the zone's daylight saving time.
    if "/" not in name or name.startswith("Etc/"):
        return False
    return name in zoneinfo.available_timezones()
