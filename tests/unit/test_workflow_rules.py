"""The Open Job Spec's workflow rules over job statuses (domain/workflows.py): which of a
batch's callbacks fire, and each kind's state, as spec/ojs-workflows.md sections 6 and 8
give them."""

from __future__ import annotations

import pytest

from jobnik_manager.domain.statuses import JobStatus
from jobnik_manager.domain.workflows import (
    ON_COMPLETE,
    ON_FAILURE,
    ON_SUCCESS,
    WorkflowState,
    batch_state,
    callbacks_due,
    chain_state,
    group_state,
)

C, F, A, P, R = (
    JobStatus.COMPLETED,
    JobStatus.FAILED,
    JobStatus.ABORTED,
    JobStatus.PENDING,
    JobStatus.IN_PROGRESS,
)


@pytest.mark.parametrize(
    ("outcomes", "due"),
    [
        ([C, C], {ON_COMPLETE, ON_SUCCESS}),
        ([C, F], {ON_COMPLETE, ON_FAILURE}),
        ([A, C], {ON_COMPLETE, ON_FAILURE}),  # cancelled: it did not succeed
        ([C, R], None),
        ([P], None),
        ([JobStatus.PAUSED, C], None),
    ],
)
def test_a_batch_fires_on_complete_always_and_one_of_success_or_failure(
    outcomes: list[JobStatus], due: set[str] | None
) -> None:
    assert callbacks_due(outcomes) == (None if due is None else frozenset(due))


def test_a_chain_is_its_jobs_state() -> None:
    said = {s: chain_state(s, cancelled=False) for s in (P, R, C, F, A)}
    assert said == {
        P: WorkflowState.RUNNING,
        R: WorkflowState.RUNNING,
        C: WorkflowState.COMPLETED,
        F: WorkflowState.FAILED,
        A: WorkflowState.CANCELLED,
    }
    assert chain_state(C, cancelled=True) is WorkflowState.CANCELLED


def test_a_group_fails_only_once_every_job_has_ended() -> None:
    assert group_state([F, R], cancelled=False) is WorkflowState.RUNNING
    assert group_state([F, C], cancelled=False) is WorkflowState.FAILED
    assert group_state([C, C], cancelled=False) is WorkflowState.COMPLETED
    assert group_state([R], cancelled=True) is WorkflowState.CANCELLED


def test_a_batch_ends_with_the_callbacks_it_fired() -> None:
    assert batch_state([C], None, cancelled=False) is WorkflowState.RUNNING  # not fired yet
    assert batch_state([C], [C, P], cancelled=False) is WorkflowState.RUNNING
    assert batch_state([F], [C, C], cancelled=False) is WorkflowState.COMPLETED
    assert batch_state([C], [C, F], cancelled=False) is WorkflowState.FAILED
    assert batch_state([C], [], cancelled=False) is WorkflowState.COMPLETED  # none defined due
    assert batch_state([R], None, cancelled=True) is WorkflowState.CANCELLED
    # A job replayed after the callbacks fired: running again, whatever they did.
    assert batch_state([R, C], [C], cancelled=False) is WorkflowState.RUNNING
