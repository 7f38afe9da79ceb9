"""A Worker's scheduling decisions, from its state alone: no event loop, no manager."""

from __future__ import annotations

import pytest

from jobnik_sdk._claims import MAX_CLAIM
from jobnik_sdk._prefetch import Prefetch
from jobnik_sdk._schedule import CLAIMS_IN_FLIGHT, Schedule, Step


def schedule(
    concurrency: int = 4, *, prefetch: int = 0, max_unanswered: int = 100, mean: float | None = None
) -> Schedule[str]:
    pace = Prefetch(concurrency, prefetch)
    if mean is not None:
        pace.observe(mean)
    return Schedule(concurrency, pace, max_unanswered=max_unanswered)


@pytest.mark.parametrize(
    ("busy", "ready", "asked", "in_flight", "expected"),
    [
        (0, 0, 0, 0, 4),  # an idle worker claims for every slot
        (3, 0, 0, 3, 1),  # one free slot, nothing waiting: claim for it
        (4, 0, 0, 4, 0),  # every slot taken, nothing claimed ahead
        (2, 2, 0, 2, 0),  # the free slots have their tasks already
        (2, 0, 2, 2, 0),  # ... or a claim on its way for them
        (0, 0, 0, 100, 0),  # reports awaiting answers fill the bound: wait
        (1, 0, 0, 100, 3),  # one of them is a running handler, not a report
    ],
)
def test_the_claim_size_fills_the_free_slots(
    busy: int, ready: int, asked: int, in_flight: int, expected: int
) -> None:
    state = schedule()
    state.busy, state.asked = busy, asked
    state.claimed([f"t{i}" for i in range(ready)])
    assert state.claim_size(in_flight) == expected


def test_claims_ahead_wait_for_a_worthwhile_batch() -> None:
    # Handlers of 1 ms on 4 slots: the target is far ahead, capped at the limit of 50.
    state = schedule(4, prefetch=50, mean=0.001)
    assert state.prefetch.target == 50
    state.busy = 4
    state.claimed(["t"] * 40)
    assert state.claim_size(4) == 0  # 10 wanted, below half the target
    state.ready.clear()
    state.claimed(["t"] * 25)
    assert state.claim_size(4) == 25  # half the target: claim


def test_a_claim_never_asks_for_more_than_one_claim_takes() -> None:
    state = schedule(500)
    assert state.claim_size(0) == MAX_CLAIM


@pytest.mark.parametrize(
    ("busy", "idle_steps", "claims_out", "expected"),
    [
        (0, 0, 0, (Step.CLAIM, 4)),  # nothing running: claim and wait for the answer
        (0, 2, 0, (Step.CLAIM, 4)),  # idle: the same (a long poll, where it may wait)
        (2, 0, 0, (Step.CLAIM_AHEAD, 2)),  # work flows: claim without waiting
        (2, 0, 1, (Step.CLAIM_AHEAD, 2)),
        (2, 0, CLAIMS_IN_FLIGHT, (Step.WAIT, 0)),  # enough claims out
        (2, 1, 1, (Step.WAIT, 0)),  # one found nothing: no more claims ahead
        (4, 0, 0, (Step.WAIT, 0)),  # no room
    ],
)
def test_the_next_step(busy: int, idle_steps: int, claims_out: int, expected: object) -> None:
    state = schedule()
    state.busy, state.idle_steps = busy, idle_steps
    assert state.next_step(in_flight=busy, claims_out=claims_out) == expected


def test_claims_ahead_are_counted_until_they_come_back() -> None:
    state = schedule()
    state.busy = 2
    state.claim_sent(2)
    assert state.claim_size(2) == 0
    state.claim_back(2)
    assert state.claim_size(2) == 2


@pytest.mark.parametrize(
    ("answers", "idle_steps"),
    [([], 0), ([False], 1), ([False, False, False], 3), ([False, False, True], 0)],
)
def test_empty_claims_count_up_and_a_found_task_restarts_the_count(
    answers: list[bool], idle_steps: int
) -> None:
    state = schedule()
    for found_any in answers:
        state.answered(found_any=found_any)
    assert state.idle_steps == idle_steps


def test_claimed_tasks_start_in_order_while_slots_are_free() -> None:
    state = schedule(2)
    state.claimed(["a", "b", "c"])
    started = []
    while (task := state.next_ready()) is not None:
        state.started()
        started.append(task)
    assert (started, list(state.ready), state.busy) == (["a", "b"], ["c"], 2)
    state.ended(0.5)
    assert (state.next_ready(), state.busy) == ("c", 1)


def test_a_handler_ending_teaches_the_prefetch_its_pace() -> None:
    state = schedule(16, prefetch=100)
    state.started()
    assert state.prefetch.target == 0
    state.ended(0.01)
    assert state.prefetch.target > 0


def test_once_stopping_every_claimed_task_is_let_go_to_be_handed_back() -> None:
    state = schedule(1)
    state.started()
    state.claimed(["a", "b"])
    assert state.next_ready() is None
    assert state.stop(now=10.0) is True
    assert [state.next_ready(), state.next_ready(), state.next_ready()] == ["a", "b", None]


def test_the_stop_is_taken_once_and_the_grace_counts_from_it() -> None:
    state = schedule()
    assert state.stop(now=100.0) is True
    assert state.stop(now=105.0) is False
    assert state.grace_left(30.0, now=110.0) == 20.0
    assert state.grace_left(30.0, now=200.0) == 0.0


def test_the_grace_starts_now_when_no_stop_was_requested() -> None:
    assert schedule().grace_left(30.0, now=5.0) == 30.0
