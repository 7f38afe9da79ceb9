"""A worker may only report COMPLETED or FAILED; RETRIED is the manager's decision."""

from __future__ import annotations

import pytest

from jobnik_manager.domain.errors import IllegalTransition
from jobnik_manager.domain.statuses import TaskStatus
from jobnik_manager.domain.tasks import apply_report


@pytest.mark.parametrize(
    "reported", [s for s in TaskStatus if s not in (TaskStatus.COMPLETED, TaskStatus.FAILED)]
)
def test_only_completed_or_failed_may_be_reported(reported: TaskStatus) -> None:
    with pytest.raises(IllegalTransition):
        apply_report(TaskStatus.IN_PROGRESS, reported, attempts=0, max_attempts=3)
