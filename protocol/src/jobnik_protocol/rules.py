"""The pure rules both sides of the API apply alike: the wait before a task's next
attempt and which failures may have one, and a percentage of work done. Standard
library only."""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Protocol


class DelayRule(Protocol):
    """A retry policy as both sides hold it (the SDK's model, the manager's value)."""

    @property
    def initial_delay(self) -> timedelta: ...
    @property
    def multiplier(self) -> float: ...
    @property
    def max_delay(self) -> timedelta: ...


def retry_delay(policy: DelayRule, failed_attempts: int) -> timedelta:
    """The wait after the `failed_attempts`-th failed attempt, none before the first:
    `min(initial_delay * multiplier ** (n - 1), max_delay)`, multiplied step by step so
    that no attempt count can overflow a float power."""
    if failed_attempts < 1:
        return timedelta(0)
    cap = policy.max_delay.total_seconds()
    seconds = policy.initial_delay.total_seconds()
    for _ in range(failed_attempts - 1):
        if seconds >= cap:
            break
        seconds *= policy.multiplier
    return timedelta(seconds=min(seconds, cap))


def jittered(delay: timedelta, jitter: float, draw: float) -> timedelta:
    """`delay` spread by a policy's `jitter` (0 to 1): with `draw` uniform in [0, 1), a
    wait uniform in [delay * (1 - jitter), delay], so that tasks failed together do not
    come back together, and the policy's maximum stays a maximum."""
    return delay * (1 - jitter * draw)


def retries_error(non_retryable: Collection[str], error_type: str | None) -> bool:
    """Whether a failure of `error_type` may be tried again under a policy that names
    `non_retryable` error types (exact names: a worker's exception class name)."""
    return error_type is None or error_type not in non_retryable


def percentage(done: int, total: int) -> int:
    """floor(100 * done / total); 0 for an empty whole."""
    if total <= 0:
        return 0
    return (100 * done) // total
