"""A Worker's scheduling state and the decisions taken from it: when to claim and how
many tasks, which claimed task starts next, and when the worker stops. Pure: no
asyncio, no I/O, no clock of its own; the Worker tells it what happened."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from enum import Enum
from typing import Generic, TypeVar

from ._claims import MAX_CLAIM
from ._prefetch import Prefetch

T = TypeVar("T")

# Claims out at once while work flows, each sent without waiting for the one before.
CLAIMS_IN_FLIGHT = 2


class Step(Enum):
    """What the claim loop does next."""

    WAIT = "wait"  # for room: a slot, a report answered, a claim back, or the stop
    CLAIM_AHEAD = "claim_ahead"  # send a claim and go on without its answer
    CLAIM = "claim"  # claim and wait for the answer (a long poll once idle)


class Schedule(Generic[T]):
    """Claimed tasks (`T`) waiting for a slot, the slots taken by running handlers, the
    tasks asked for by claims on their way, how many claims in a row found nothing,
    and whether the worker is stopping.

    `in_flight` passed to the decisions counts handlers running and reports awaiting
    the manager's answer, as the Worker tracks them; reports awaiting answers are
    bounded by `max_unanswered`, so a slow manager slows claims.
    """

    def __init__(self, concurrency: int, prefetch: Prefetch, *, max_unanswered: int) -> None:
        self.concurrency = concurrency
        self.prefetch = prefetch
        self.max_unanswered = max_unanswered
        self.ready: deque[T] = deque()
        self.busy = 0
        self.asked = 0
        self.idle_steps = 0
        self.stopping = False
        self.stop_requested_at: float | None = None

    # ---- claiming ---------------------------------------------------------------------

    def claim_size(self, in_flight: int) -> int:
        """How many tasks to claim now: enough for the free slots and the claimed-ahead
        target, once there is room for a worthwhile batch; 0 to wait for room."""
        if in_flight - self.busy >= self.max_unanswered:
            return 0  # a slow manager slows claims: wait for reports to be answered
        free = self.concurrency - self.busy
        ahead = self.prefetch.target
        wanted = free + ahead - len(self.ready) - self.asked
        if wanted <= 0:
            return 0
        # A slot would idle, or a full claim (or half the target) has started: claim.
        if (free > 0 and not self.ready) or wanted >= max(1, min(MAX_CLAIM, ahead // 2)):
            return min(wanted, MAX_CLAIM)
        return 0

    def next_step(self, in_flight: int, claims_out: int) -> tuple[Step, int]:
        """What to do next, and the claim's size: while work flows, claims go out ahead
        (up to CLAIMS_IN_FLIGHT); once one found nothing, one at a time, waited for."""
        limit = self.claim_size(in_flight)
        if not limit:
            return Step.WAIT, 0
        if claims_out and (self.idle_steps or claims_out >= CLAIMS_IN_FLIGHT):
            return Step.WAIT, 0  # a claim coming back makes room too
        if not self.idle_steps and (self.busy or self.ready):
            return Step.CLAIM_AHEAD, limit
        return Step.CLAIM, limit

    def claim_sent(self, limit: int) -> None:
        """A claim ahead for `limit` tasks went out."""
        self.asked += limit

    def claim_back(self, limit: int) -> None:
        """A claim ahead for `limit` tasks came back (its tasks are `claimed` apart)."""
        self.asked -= limit

    def answered(self, *, found_any: bool) -> None:
        """A claim came back: the idle count restarts when it `found_any` task, and
        grows otherwise."""
        self.idle_steps = 0 if found_any else self.idle_steps + 1

    def claimed(self, tasks: Iterable[T]) -> None:
        """Claimed tasks wait for a slot."""
        self.ready.extend(tasks)

    # ---- starting ---------------------------------------------------------------------

    def next_ready(self) -> T | None:
        """The claimed task to take up next: to start while a slot is free, or to hand
        back once stopping; None while it must wait."""
        if self.ready and (self.busy < self.concurrency or self.stopping):
            return self.ready.popleft()
        return None

    def started(self) -> None:
        """A handler took a slot."""
        self.busy += 1

    def ended(self, seconds: float) -> None:
        """A handler that ran for `seconds` freed its slot."""
        self.busy -= 1
        self.prefetch.observe(seconds)

    # ---- stopping ---------------------------------------------------------------------

    def stop(self, now: float) -> bool:
        """The worker is to stop; False if it was already."""
        if self.stopping:
            return False
        self.stopping = True
        self.stop_requested_at = now
        return True

    def grace_left(self, grace: float, now: float) -> float:
        """Seconds left of the shutdown `grace`, counted from the stop request."""
        started = self.stop_requested_at if self.stop_requested_at is not None else now
        return max(0.0, started + grace - now)
