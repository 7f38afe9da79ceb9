"""How far a Worker claims ahead, from how long its handlers run."""

from __future__ import annotations

import pytest

from jobnik_sdk._prefetch import HORIZON_SECONDS, Prefetch


def test_nothing_is_claimed_ahead_before_a_handler_has_run() -> None:
    assert Prefetch(16, 100).target == 0


@pytest.mark.parametrize(
    ("concurrency", "seconds", "expected"),
    [
        (16, 0.0, 100),  # no-op handlers: as far ahead as allowed
        (16, 0.001, 100),
        (16, 0.1, 16),  # one slot's worth each within the horizon
        (4, 0.2, 2),
        (16, 1.0, 1),
        (4, 1.0, 0),  # long handlers: nothing held back from other workers
        (1, 3600.0, 0),
    ],
)
def test_the_target_covers_what_would_start_within_the_horizon(
    concurrency: int, seconds: float, expected: int
) -> None:
    prefetch = Prefetch(concurrency, 100)
    prefetch.observe(seconds)
    assert prefetch.target == expected
    assert expected == min(100, int(concurrency * HORIZON_SECONDS / max(seconds, 1e-4)))


def test_the_mean_follows_handlers_that_slow_down() -> None:
    prefetch = Prefetch(16, 100)
    prefetch.observe(0.0)
    assert prefetch.target == 100
    for _ in range(40):
        prefetch.observe(2.0)
    assert prefetch.target == 0


def test_a_limit_of_zero_turns_it_off() -> None:
    prefetch = Prefetch(16, 0)
    prefetch.observe(0.0)
    assert prefetch.target == 0
