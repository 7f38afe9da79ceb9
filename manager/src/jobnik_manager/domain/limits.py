"""Stage-type limits: how many of a type's tasks may run at once (`max_in_flight`) and
how many may be handed out a second (`rate`, a token bucket holding up to `burst`).
Pure: the claim reads the limit's row (locked) and the type's tasks in flight, asks
`allowance` how many it may hand out now, and writes back the tokens left (`spent`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from .errors import RuleViolation

MAX_RATE = 100_000.0
MAX_COUNT = 1_000_000
# While a concurrency limit holds a type back, a waiting claim looks again this often
# (a task of the type ending wakes nobody).
IN_FLIGHT_RECHECK = 0.2


@dataclass(frozen=True, slots=True)
class Limit:
    stage_type: str
    max_in_flight: int | None
    rate: float | None  # tasks per second
    burst: int  # the bucket's size: tasks handed out at once after a quiet spell
    tokens: float  # what the bucket held at `refilled_at`
    refilled_at: datetime

    def __post_init__(self) -> None:
        if self.max_in_flight is None and self.rate is None:
            raise _bad("give maxInFlight, ratePerSecond or both")
        if self.max_in_flight is not None and not 1 <= self.max_in_flight <= MAX_COUNT:
            raise _bad(f"maxInFlight must be between 1 and {MAX_COUNT:,} (pause a type to stop it)")
        if self.rate is not None and not (0 < self.rate <= MAX_RATE and math.isfinite(self.rate)):
            raise _bad(f"ratePerSecond must be above 0 and at most {MAX_RATE:,.0f}")
        if not 1 <= self.burst <= MAX_COUNT:
            raise _bad(f"burst must be between 1 and {MAX_COUNT:,}")


def default_burst(rate: float | None) -> int:
    """A second's worth of tasks, at least one."""
    return 1 if rate is None else max(1, math.ceil(rate))


@dataclass(frozen=True, slots=True)
class Allowance:
    n: int  # tasks the claim may hand out now
    tokens: float  # the bucket now, before this claim spends from it
    retry_after: float | None  # seconds until more may be handed out, when it held some back


def allowance(limit: Limit, in_flight: int, now: datetime, asked: int) -> Allowance:
    """How many of `asked` tasks of the type a claim at `now` may hand out."""
    n = asked
    retry_after: float | None = None
    tokens = float(limit.burst)
    if limit.max_in_flight is not None:
        room = max(0, limit.max_in_flight - in_flight)
        if room < n:
            n, retry_after = room, IN_FLIGHT_RECHECK
    if limit.rate is not None:
        elapsed = max(0.0, (now - limit.refilled_at).total_seconds())
        tokens = min(float(limit.burst), limit.tokens + elapsed * limit.rate)
        whole = math.floor(tokens + 1e-9)
        if whole < n:
            # The next token after those this claim spends.
            wait = (whole + 1 - tokens) / limit.rate
            n, retry_after = whole, wait if retry_after is None else max(retry_after, wait)
    return Allowance(max(0, n), tokens, retry_after)


def spent(a: Allowance, claimed: int) -> float:
    """The tokens left once `claimed` tasks were handed out."""
    return max(0.0, a.tokens - claimed)


def _bad(message: str) -> RuleViolation:
    return RuleViolation(message, code="VALIDATION_ERROR")
