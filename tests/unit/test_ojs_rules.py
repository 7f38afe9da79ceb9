"""The Open Job Spec's pure rules: how a task reads as one of the spec's states (every
status, with and without a delay, claimable or waiting on its stage or job), and the
worker states an operator may tell a worker, never back from `terminate`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobnik_manager.domain.ojs import State, WorkerState, may_direct, state_of
from jobnik_manager.domain.statuses import TaskStatus

pytestmark = pytest.mark.unit

NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
LATER, EARLIER = NOW + timedelta(seconds=5), NOW - timedelta(seconds=5)


@pytest.mark.parametrize(
    ("status", "not_before", "claimable", "state"),
    [
        (TaskStatus.PENDING, None, True, State.AVAILABLE),
        (TaskStatus.PENDING, None, False, State.PENDING),  # its stage or job waits
        (TaskStatus.PENDING, LATER, False, State.SCHEDULED),
        (TaskStatus.PENDING, EARLIER, False, State.AVAILABLE),  # due; the next tick opens it
        (TaskStatus.RETRIED, LATER, False, State.RETRYABLE),
        (TaskStatus.RETRIED, EARLIER, False, State.AVAILABLE),
        (TaskStatus.IN_PROGRESS, None, False, State.ACTIVE),
        (TaskStatus.COMPLETED, None, False, State.COMPLETED),
        (TaskStatus.FAILED, None, False, State.DISCARDED),
        (TaskStatus.ABORTED, None, False, State.CANCELLED),
    ],
)
def test_a_task_reads_as_the_specs_state(
    status: TaskStatus, not_before: datetime | None, claimable: bool, state: State
) -> None:
    assert state_of(status, not_before, NOW, claimable=claimable) is state


def test_a_job_aborted_at_its_expiry_reads_discarded() -> None:
    assert state_of(TaskStatus.ABORTED, None, NOW, "expired") is State.DISCARDED


@pytest.mark.parametrize(
    ("current", "allowed"),
    [
        (WorkerState.RUNNING, {WorkerState.RUNNING, WorkerState.QUIET, WorkerState.TERMINATE}),
        (WorkerState.QUIET, {WorkerState.QUIET, WorkerState.TERMINATE}),
        (WorkerState.TERMINATE, {WorkerState.TERMINATE}),
    ],
)
def test_a_worker_is_never_told_to_go_back(current: WorkerState, allowed: set[WorkerState]) -> None:
    assert {wanted for wanted in WorkerState if may_direct(current, wanted)} == allowed
