"""How many tasks a Worker claims ahead of its free slots: as many as its recent pace
would start within a short horizon, so short tasks never wait for a claim's round trip
and long ones are not held back from other workers."""

from __future__ import annotations

# Claimed-ahead tasks should start within this long: well under any lease, and long
# enough to cover a claim's round trip at full speed.
HORIZON_SECONDS = 0.1
# Weight of the newest handler duration in the running mean.
_SMOOTHING = 0.2
# Durations below this count as this: a no-op handler still costs the loop some time.
_FLOOR_SECONDS = 1e-4


class Prefetch:
    """The number of tasks to hold claimed beyond the running ones, from the running
    mean of handler durations: `concurrency` slots finishing a task every `mean`
    seconds start `concurrency * HORIZON_SECONDS / mean` tasks within the horizon.
    Nothing is claimed ahead before a handler has finished, nor ever more than `limit`.
    """

    def __init__(self, concurrency: int, limit: int) -> None:
        self._concurrency = concurrency
        self._limit = limit
        self._mean: float | None = None

    def observe(self, seconds: float) -> None:
        """A handler ran for `seconds`."""
        seconds = max(seconds, _FLOOR_SECONDS)
        self._mean = (
            seconds if self._mean is None else self._mean + _SMOOTHING * (seconds - self._mean)
        )

    @property
    def target(self) -> int:
        """How many tasks to hold claimed ahead now."""
        if self._mean is None or self._limit == 0:
            return 0
        return min(self._limit, int(self._concurrency * HORIZON_SECONDS / self._mean))
