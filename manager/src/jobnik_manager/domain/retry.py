"""Retry policy: how long a failed task waits before it is offered again, and which
failures are not tried again at all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from jobnik_protocol.rules import jittered, retries_error, retry_delay

DEFAULT_MULTIPLIER = 2.0
DEFAULT_MAX_DELAY = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with a cap: initial, initial*m, initial*m^2, ... <= max_delay
    (or, `linear`, initial, 2*initial, 3*initial, ...: an Open Job Spec strategy), each
    wait spread down by up to `jitter` of it; a failure whose error type is one of
    `non_retryable` fails the task for good, whatever attempts it has left."""

    initial_delay: timedelta
    multiplier: float = DEFAULT_MULTIPLIER
    max_delay: timedelta = DEFAULT_MAX_DELAY
    jitter: float = 0.0
    non_retryable: tuple[str, ...] = ()
    linear: bool = False

    def delay_after(self, failed_attempts: int, draw: float = 0.0) -> timedelta:
        """The wait after the n-th failed attempt (n >= 1); `draw`, uniform in [0, 1),
        places it within the jitter's spread (0: the longest)."""
        if self.linear:
            grown = min(self.initial_delay * max(failed_attempts, 0), self.max_delay)
            return jittered(grown, self.jitter, draw)
        return jittered(retry_delay(self, failed_attempts), self.jitter, draw)

    def retries(self, error_type: str | None) -> bool:
        return retries_error(self.non_retryable, error_type)

    def to_json(self) -> dict[str, Any]:
        stored: dict[str, Any] = {
            "initialDelaySeconds": self.initial_delay.total_seconds(),
            "multiplier": self.multiplier,
            "maxDelaySeconds": self.max_delay.total_seconds(),
        }
        # Left out when unset, so that policies made before they existed read the same.
        if self.jitter:
            stored["jitter"] = self.jitter
        if self.non_retryable:
            stored["nonRetryableErrors"] = list(self.non_retryable)
        if self.linear:
            stored["backoff"] = "linear"
        return stored

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
            jitter=float(raw.get("jitter", 0.0)),
            non_retryable=tuple(raw.get("nonRetryableErrors", ())),
            linear=raw.get("backoff") == "linear",
        )
