"""Retry delay policy: how long a failed task waits before it is offered again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from jobnik_protocol.rules import retry_delay

DEFAULT_MULTIPLIER = 2.0
DEFAULT_MAX_DELAY = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with a cap: initial, initial*m, initial*m^2, ... <= max_delay."""

    initial_delay: timedelta
    multiplier: float = DEFAULT_MULTIPLIER
    max_delay: timedelta = DEFAULT_MAX_DELAY

    def delay_after(self, failed_attempts: int) -> timedelta:
        """The wait after the n-th failed attempt (n >= 1)."""
        return retry_delay(self, failed_attempts)

    def to_json(self) -> dict[str, Any]:
        return {
            "initialDelaySeconds": self.initial_delay.total_seconds(),
            "multiplier": self.multiplier,
            "maxDelaySeconds": self.max_delay.total_seconds(),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> RetryPolicy | None:
        if not raw:
            return None
        return cls(
            initial_delay=timedelta(seconds=float(raw["initialDelaySeconds"])),
            multiplier=float(raw.get("multiplier", DEFAULT_MULTIPLIER)),
            max_delay=timedelta(
                seconds=float(raw.get("maxDelaySeconds", DEFAULT_MAX_DELAY.total_seconds()))
            ),
        )
