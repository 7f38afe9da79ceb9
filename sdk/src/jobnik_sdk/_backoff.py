"""Exponential backoff with jitter, shared by request retries and idle polling."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays that grow from `initial` by `multiplier` per step, capped at `maximum`.

    Each delay is spread by up to `jitter` (a fraction) either way, so that many
    clients started together do not retry or poll in lockstep.
    """

    initial: timedelta = timedelta(milliseconds=200)
    maximum: timedelta = timedelta(seconds=5)
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < timedelta(0) or self.maximum < self.initial:
            raise ValueError("backoff needs 0 <= initial <= maximum")
        if self.multiplier < 1:
            raise ValueError("backoff multiplier must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("backoff jitter is a fraction between 0 and 1")

    def delay(self, step: int, *, rng: random.Random | None = None) -> timedelta:
        """The delay before the `step`-th retry or poll (counting from 1)."""
        ceiling = self.maximum.total_seconds()
        base = ceiling
        initial = self.initial.total_seconds()
        if initial < ceiling:
            # Past the step that reaches the ceiling the power only overflows: stop there.
            last = (
                math.ceil(math.log(ceiling / initial, self.multiplier))
                if initial > 0 and self.multiplier > 1
                else 0
            )
            base = min(ceiling, initial * self.multiplier ** min(max(step - 1, 0), last))
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return timedelta(seconds=min(ceiling, max(0.0, base * (1 + spread))))
