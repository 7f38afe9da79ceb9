"""Backoff delays: growing, capped, and defined at any step count."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from jobnik_sdk import Backoff

CAP = timedelta(seconds=5)


@pytest.mark.parametrize("step", [20, 1_025, 10**6, 10**12])
@pytest.mark.parametrize("multiplier", [1.5, 2.0, 100.0])
def test_any_step_past_the_ceiling_returns_the_cap(step: int, multiplier: float) -> None:
    backoff = Backoff(
        initial=timedelta(milliseconds=250), maximum=CAP, multiplier=multiplier, jitter=0
    )
    assert backoff.delay(step) == CAP


def test_delays_grow_by_the_multiplier_until_the_cap() -> None:
    backoff = Backoff(initial=timedelta(milliseconds=250), maximum=CAP, jitter=0)
    assert [backoff.delay(step).total_seconds() for step in range(1, 8)] == [
        0.25,
        0.5,
        1.0,
        2.0,
        4.0,
        5.0,
        5.0,
    ]


def test_jitter_spreads_a_capped_delay_but_never_past_the_cap() -> None:
    backoff = Backoff(initial=timedelta(milliseconds=250), maximum=CAP, jitter=0.3)
    rng = random.Random(7)
    delays = [backoff.delay(10**6, rng=rng) for _ in range(200)]
    assert all(CAP * 0.7 <= d <= CAP for d in delays)
    assert len(set(delays)) > 1


@pytest.mark.parametrize(
    ("initial", "multiplier", "expected"),
    [
        (timedelta(0), 2.0, timedelta(0)),  # no wait at all, at any step
        (timedelta(seconds=1), 1.0, timedelta(seconds=1)),  # constant
        (CAP, 2.0, CAP),  # starts at the cap
    ],
)
def test_degenerate_backoffs(initial: timedelta, multiplier: float, expected: timedelta) -> None:
    backoff = Backoff(initial=initial, maximum=CAP, multiplier=multiplier, jitter=0)
    assert backoff.delay(10**6) == expected
