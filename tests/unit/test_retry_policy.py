"""The retry delay policy: exponential (or linear) backoff with a cap."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobnik_manager.domain.retry import RetryPolicy

S = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (RetryPolicy(2 * S, 2, 60 * S), [0, 2, 4, 8, 16, 32, 60, 60]),
        (RetryPolicy(5 * S, 1, 60 * S), [0, 5, 5, 5, 5, 5, 5, 5]),
        (RetryPolicy(1 * S, 3, 10 * S), [0, 1, 3, 9, 10, 10, 10, 10]),
        (RetryPolicy(0 * S, 2, 10 * S), [0, 0, 0, 0, 0, 0, 0, 0]),
        (RetryPolicy(90 * S, 2, 60 * S), [0, 60, 60, 60, 60, 60, 60, 60]),
        (RetryPolicy(2 * S, 2, 9 * S, linear=True), [0, 2, 4, 6, 8, 9, 9, 9]),
    ],
)
def test_delay_after_each_failed_attempt(policy: RetryPolicy, expected: list[float]) -> None:
    assert [policy.delay_after(n).total_seconds() for n in range(8)] == expected


def test_a_huge_attempt_count_stays_at_the_cap() -> None:
    policy = RetryPolicy(1 * S, 100, 3600 * S)
    assert policy.delay_after(10**6) == 3600 * S


def test_json_round_trip_and_defaults() -> None:
    policy = RetryPolicy(1.5 * S, 3, 90 * S)
    assert RetryPolicy.from_json(policy.to_json()) == policy
    linear = RetryPolicy(1 * S, 1, 30 * S, linear=True)
    assert RetryPolicy.from_json(linear.to_json()) == linear
    assert RetryPolicy.from_json({"initialDelaySeconds": 4}) == RetryPolicy(4 * S)
    assert RetryPolicy.from_json(None) is None
