"""A worker may report COMPLETED, FAILED or RETRIED ("retry later"), and anyone may
cancel a task (ABORTED); nothing else."""

from __future__ import annotations

import pytest

from jobnik_manager.domain.errors import IllegalTransition
from jobnik_manager.domain.statuses import TaskStatus
from jobnik_manager.domain.tasks import ReportOutcome, apply_report

T = TaskStatus
REPORTABLE = (T.COMPLETED, T.FAILED, T.RETRIED, T.ABORTED)


@pytest.mark.parametrize("reported", [s for s in TaskStatus if s not in REPORTABLE], ids=str)
def test_other_statuses_may_not_be_reported(reported: TaskStatus) -> None:
    with pytest.raises(IllegalTransition):
        apply_report(T.IN_PROGRESS, reported, attempts=0, max_attempts=3)


@pytest.mark.parametrize("current", [T.PENDING, T.RETRIED, T.IN_PROGRESS], ids=str)
def test_a_cancel_aborts_a_task_not_final_and_spends_no_attempt(current: TaskStatus) -> None:
    assert apply_report(current, T.ABORTED, attempts=2, max_attempts=3) == ReportOutcome(
        T.ABORTED, 2
    )


@pytest.mark.parametrize("current", [T.CREATED, T.COMPLETED, T.FAILED, T.ABORTED], ids=str)
def test_a_cancel_of_a_final_or_unborn_task_is_illegal(current: TaskStatus) -> None:
    with pytest.raises(IllegalTransition):
        apply_report(current, T.ABORTED, attempts=0, max_attempts=3)


@pytest.mark.parametrize(("attempts", "max_attempts"), [(0, 1), (0, 3), (2, 3), (5, 5)])
def test_retry_later_keeps_the_attempt_count(attempts: int, max_attempts: int) -> None:
    outcome = apply_report(T.IN_PROGRESS, T.RETRIED, attempts=attempts, max_attempts=max_attempts)
    assert outcome == ReportOutcome(T.RETRIED, attempts)


@pytest.mark.parametrize(("attempts", "max_attempts"), [(0, 1), (0, 5), (3, 5)])
def test_non_retryable_failure_fails_at_once(attempts: int, max_attempts: int) -> None:
    outcome = apply_report(
        T.IN_PROGRESS, T.FAILED, attempts=attempts, max_attempts=max_attempts, retryable=False
    )
    assert outcome == ReportOutcome(T.FAILED, attempts + 1)


@pytest.mark.parametrize("current", [s for s in TaskStatus if s is not T.IN_PROGRESS], ids=str)
def test_retry_later_only_from_in_progress(current: TaskStatus) -> None:
    with pytest.raises(IllegalTransition):
        apply_report(current, T.RETRIED, attempts=0, max_attempts=3)
