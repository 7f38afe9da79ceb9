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
    current: TaskStatus, reported: TaskStatus, *, attempts: int, max_attempts: int
) -> ReportOutcome:
    """The task's next status and attempt count after a worker reports `reported`.

    A FAILED report spends an attempt; the task is offered again (RETRIED) while
    attempts remain, and fails for good once they are spent.
    """
    if reported not in USER_TASK_TARGETS:
        raise IllegalTransition("TASK", current, reported)
    ensure_task_transition(current, reported, Actor.USER)
    if reported is TaskStatus.COMPLETED:
        return ReportOutcome(TaskStatus.COMPLETED, attempts)
    spent = attempts + 1
    if spent < max_attempts:
        return ReportOutcome(TaskStatus.RETRIED, spent)
    return ReportOutcome(TaskStatus.FAILED, spent)
