"""What a worker's report does to a task."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from jobnik_manager.domain.errors import IllegalTransition
from jobnik_manager.domain.statuses import TaskStatus
from jobnik_manager.domain.tasks import DEFAULT_MAX_ATTEMPTS, ReportOutcome, apply_report

T = TaskStatus

ATTEMPTS = range(0, 5)  # 0..4
MAX_ATTEMPTS = range(1, 6)  # 1..5
GRID = list(itertools.product(ATTEMPTS, MAX_ATTEMPTS))


def test_default_max_attempts() -> None:
    assert DEFAULT_MAX_ATTEMPTS == 1


def test_report_outcome_is_frozen_value() -> None:
    outcome = ReportOutcome(T.COMPLETED, 2)
    assert outcome == ReportOutcome(T.COMPLETED, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.attempts = 3  # type: ignore[misc]


@pytest.mark.parametrize(("attempts", "max_attempts"), GRID)
def test_completed_keeps_attempts(attempts: int, max_attempts: int) -> None:
    outcome = apply_report(T.IN_PROGRESS, T.COMPLETED, attempts=attempts, max_attempts=max_attempts)
    assert outcome == ReportOutcome(T.COMPLETED, attempts)


# Expected outcome of a FAILED report, written out per (attempts, max_attempts):
# the report spends one attempt; RETRIED while attempts+1 < max_attempts, else FAILED.
EXPECTED_FAILED: dict[tuple[int, int], tuple[TaskStatus, int]] = {
    (0, 1): (T.FAILED, 1),
    (0, 2): (T.RETRIED, 1),
    (0, 3): (T.RETRIED, 1),
    (0, 4): (T.RETRIED, 1),
    (0, 5): (T.RETRIED, 1),
    (1, 1): (T.FAILED, 2),
    (1, 2): (T.FAILED, 2),
    (1, 3): (T.RETRIED, 2),
    (1, 4): (T.RETRIED, 2),
    (1, 5): (T.RETRIED, 2),
    (2, 1): (T.FAILED, 3),
    (2, 2): (T.FAILED, 3),
    (2, 3): (T.FAILED, 3),
    (2, 4): (T.RETRIED, 3),
    (2, 5): (T.RETRIED, 3),
    (3, 1): (T.FAILED, 4),
    (3, 2): (T.FAILED, 4),
    (3, 3): (T.FAILED, 4),
    (3, 4): (T.FAILED, 4),
    (3, 5): (T.RETRIED, 4),
    (4, 1): (T.FAILED, 5),
    (4, 2): (T.FAILED, 5),
    (4, 3): (T.FAILED, 5),
    (4, 4): (T.FAILED, 5),
    (4, 5): (T.FAILED, 5),
}


def test_expected_failed_table_covers_the_grid() -> None:
    assert set(EXPECTED_FAILED) == set(GRID)
    assert len(GRID) == 25


@pytest.mark.parametrize(("attempts", "max_attempts"), GRID)
def test_failed_report(attempts: int, max_attempts: int) -> None:
    status, spent = EXPECTED_FAILED[(attempts, max_attempts)]
    outcome = apply_report(T.IN_PROGRESS, T.FAILED, attempts=attempts, max_attempts=max_attempts)
    assert outcome == ReportOutcome(status, spent)
    assert outcome.attempts == attempts + 1


def test_failed_with_default_max_attempts_fails_for_good() -> None:
    outcome = apply_report(T.IN_PROGRESS, T.FAILED, attempts=0, max_attempts=DEFAULT_MAX_ATTEMPTS)
    assert outcome == ReportOutcome(T.FAILED, 1)


@pytest.mark.parametrize("max_attempts", MAX_ATTEMPTS)
def test_retry_loop_uses_exactly_max_attempts(max_attempts: int) -> None:
    """Fail every attempt: RETRIED max_attempts-1 times, then FAILED on the last."""
    attempts = 0
    seen: list[TaskStatus] = []
    while True:
        outcome = apply_report(
            T.IN_PROGRESS, T.FAILED, attempts=attempts, max_attempts=max_attempts
        )
        seen.append(outcome.status)
        attempts = outcome.attempts
        if outcome.status is T.FAILED:
            break
        assert len(seen) <= max_attempts
    assert seen == [T.RETRIED] * (max_attempts - 1) + [T.FAILED]
    assert attempts == max_attempts


@pytest.mark.parametrize("reported", [T.COMPLETED, T.FAILED], ids=str)
@pytest.mark.parametrize("current", [s for s in TaskStatus if s is not T.IN_PROGRESS], ids=str)
def test_report_on_a_task_not_in_progress_is_illegal(
    current: TaskStatus, reported: TaskStatus
) -> None:
    with pytest.raises(IllegalTransition) as info:
        apply_report(current, reported, attempts=0, max_attempts=3)
    err = info.value
    assert err.code == "ILLEGAL_TASK_STATUS_TRANSITION"
    assert err.http_status == 400
    assert err.message == f"Illegal status transition from {current.value} to {reported.value}"


@pytest.mark.parametrize("reported", [T.CREATED, T.PENDING, T.IN_PROGRESS], ids=str)
def test_reporting_a_non_user_status_is_illegal(reported: TaskStatus) -> None:
    with pytest.raises(IllegalTransition) as info:
        apply_report(T.IN_PROGRESS, reported, attempts=0, max_attempts=3)
    assert info.value.code == "ILLEGAL_TASK_STATUS_TRANSITION"
