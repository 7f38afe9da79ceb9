"""The Open Job Spec's workflows, as rules over the statuses of the jobs they hold: a
chain is one job whose stages are its steps (our stages run in order), a group or a
batch a job each, run side by side. What a workflow's state is, and which of a batch's
callbacks are due once its jobs are all final. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from .statuses import JobStatus


class Kind(StrEnum):
    CHAIN = "chain"
    GROUP = "group"
    BATCH = "batch"


class WorkflowState(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self is not WorkflowState.RUNNING


ON_COMPLETE, ON_SUCCESS, ON_FAILURE = "on_complete", "on_success", "on_failure"
CALLBACKS = (ON_COMPLETE, ON_SUCCESS, ON_FAILURE)

# How many jobs (or steps) a workflow may hold; a workflow inside another is refused.
MAX_JOBS = 1000

# The lifecycle events a workflow's moments are told as (ojs-events.md 3.5).
STARTED = "workflow.started"
ENDED = {
    WorkflowState.COMPLETED: "workflow.completed",
    WorkflowState.FAILED: "workflow.failed",
    WorkflowState.CANCELLED: "workflow.cancelled",
}
EVENT_TYPES = (STARTED, *ENDED.values())


def callbacks_due(outcomes: Sequence[JobStatus]) -> frozenset[str] | None:
    """Which callbacks a batch fires, given its jobs' statuses: None while any is not
    final; then on_complete, and on_success if every one completed, else on_failure (a
    job cancelled counts as failed: it did not succeed)."""
    if not all(status.is_final for status in outcomes):
        return None
    succeeded = all(status is JobStatus.COMPLETED for status in outcomes)
    return frozenset({ON_COMPLETE, ON_SUCCESS if succeeded else ON_FAILURE})


def chain_state(job: JobStatus, cancelled: bool) -> WorkflowState:
    """A chain's state is its job's: its steps are the job's stages, in order."""
    if cancelled or job is JobStatus.ABORTED:
        return WorkflowState.CANCELLED
    if job is JobStatus.COMPLETED:
        return WorkflowState.COMPLETED
    return WorkflowState.FAILED if job is JobStatus.FAILED else WorkflowState.RUNNING


def group_state(outcomes: Sequence[JobStatus], cancelled: bool) -> WorkflowState:
    """Running until every job is final; then completed if all succeeded, else failed."""
    if cancelled:
        return WorkflowState.CANCELLED
    if not all(status.is_final for status in outcomes):
        return WorkflowState.RUNNING
    succeeded = all(status is JobStatus.COMPLETED for status in outcomes)
    return WorkflowState.COMPLETED if succeeded else WorkflowState.FAILED


def batch_state(
    outcomes: Sequence[JobStatus], callbacks: Sequence[JobStatus] | None, cancelled: bool
) -> WorkflowState:
    """Running until its jobs and then the callbacks fired are final; completed when
    those callbacks succeeded (whatever the jobs' outcome: on_failure handled it),
    failed when one of them did not. `callbacks`: the statuses of the callbacks fired,
    None before they are."""
    if cancelled:
        return WorkflowState.CANCELLED
    if callbacks_due(outcomes) is None:  # a job of it not final (or replayed since)
        return WorkflowState.RUNNING
    if callbacks is None or not all(status.is_final for status in callbacks):
        return WorkflowState.RUNNING
    succeeded = all(status is JobStatus.COMPLETED for status in callbacks)
    return WorkflowState.COMPLETED if succeeded else WorkflowState.FAILED
