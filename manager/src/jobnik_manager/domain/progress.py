"""How stage and job statuses follow from their children."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from .statuses import JobStatus, StageStatus
from .summary import Summary, percentage


def stage_outcome(summary: Summary, allowed_failures: int = 0) -> StageStatus | None:
    """The final status a stage reaches with this summary, or None while it runs.

    More tasks failed for good than the stage allows (by default none) fail the stage;
    once every task is final otherwise, the stage completes (partly, if some failed). A
    task cancelled on its own (ABORTED) counts as neither completed nor failed: the
    stage completes when its other tasks are done.
    """
    if summary.failed > allowed_failures:
        return StageStatus.FAILED
    if summary.total > 0 and summary.open == 0:
        return StageStatus.COMPLETED
    return None


class Turn(Enum):
    """What happens to the next stage when the one before it completes."""

    ACTIVATE = "activate"  # CREATED -> PENDING: its tasks become claimable
    COMPLETE_EMPTY = "complete_empty"  # no tasks: it completes at once, and so on
    HOLD = "hold"  # WAITING: stays until a person approves it
    JOB_DONE = "job_done"  # there is no next stage


def next_stage_turn(next_status: StageStatus | None, next_open: int) -> Turn:
    """`next_open`: the next stage's tasks not final yet (none: nothing to wait for,
    whether it never had tasks or they were all cancelled)."""
    if next_status is None:
        return Turn.JOB_DONE
    if next_status is StageStatus.WAITING:
        return Turn.HOLD
    if next_status is StageStatus.CREATED:
        return Turn.ACTIVATE if next_open > 0 else Turn.COMPLETE_EMPTY
    raise ValueError(f"a stage after an active one cannot be {next_status}")


def job_percentage(stage_statuses: Sequence[StageStatus]) -> int:
    done = sum(1 for s in stage_statuses if s is StageStatus.COMPLETED)
    return percentage(done, len(stage_statuses))


def resumed_job_status(stage_statuses: Sequence[StageStatus], started: bool) -> JobStatus:
    """The status a paused job returns to: the one its stages imply.

    `started` tells whether any of its tasks was ever claimed.
    """
    if any(s is StageStatus.FAILED for s in stage_statuses):
        return JobStatus.FAILED
    if stage_statuses and all(s is StageStatus.COMPLETED for s in stage_statuses):
        return JobStatus.COMPLETED
    return JobStatus.IN_PROGRESS if started else JobStatus.PENDING


def stage_progress(status: StageStatus, summary: Summary, in_flight: float) -> float:
    """How far a stage is, 0 to 100: its completed tasks, and the progress its running
    tasks last reported (`in_flight`: their percentages summed), over all its tasks. A
    completed stage is at 100 (a partial one too); v1's `percentage` counts completed
    tasks only."""
    if status is StageStatus.COMPLETED:
        return 100.0
    if summary.total <= 0:
        return 0.0
    return min(100.0, (100 * summary.completed + in_flight) / summary.total)


def job_progress(stage_progresses: Sequence[float]) -> float:
    """How far a job is, 0 to 100: the mean of its stages' progress."""
    if not stage_progresses:
        return 0.0
    return sum(stage_progresses) / len(stage_progresses)
