"""What a worker's report does to a task."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import IllegalTransition
from .statuses import TaskStatus
from .transitions import USER_TASK_TARGETS, Actor, ensure_task_transition

# The reference stores 1 when a task is created without maxAttempts.
DEFAULT_MAX_ATTEMPTS = 1


@dataclass(frozen=True, slots=True)
class ReportOutcome:
    status: TaskStatus
    attempts: int


def apply_report(
    current: TaskStatus,
    reported: TaskStatus,
    *,
    attempts: int,
    max_attempts: int,
    retryable: bool = True,
) -> ReportOutcome:
    """The task's next status and attempt count after a worker reports `reported`.

    A FAILED report spends an attempt; the task is offered again (RETRIED) while
    attempts remain and it is `retryable`, and fails for good otherwise. A RETRIED
    report ("retry later") puts the task back without spending one.
    """
    if reported not in USER_TASK_TARGETS:
        raise IllegalTransition("TASK", current, reported)
    ensure_task_transition(current, reported, Actor.USER)
    if reported is not TaskStatus.FAILED:
        return ReportOutcome(reported, attempts)
    spent = attempts + 1
    if retryable and spent < max_attempts:
        return ReportOutcome(TaskStatus.RETRIED, spent)
    return ReportOutcome(TaskStatus.FAILED, spent)
