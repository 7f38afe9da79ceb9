"""How stage and job statuses follow from their children."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from .statuses import JobStatus, StageStatus
from .summary import Summary, percentage


def stage_outcome(summary: Summary) -> StageStatus | None:
    """The final status a stage reaches with this summary, or None while it runs.

    One task failed for good fails the stage; all tasks completed completes it.
    """
    if summary.failed > 0:
        return StageStatus.FAILED
    if summary.all_completed:
        return StageStatus.COMPLETED
    return None


class Turn(Enum):
    """What happens to the next stage when the one before it completes."""

    ACTIVATE = "activate"  # CREATED -> PENDING: its tasks become claimable
    COMPLETE_EMPTY = "complete_empty"  # no tasks: it completes at once, and so on
    HOLD = "hold"  # WAITING: stays until a person approves it
    JOB_DONE = "job_done"  # there is no next stage


def next_stage_turn(next_status: StageStatus | None, next_total: int) -> Turn:
    if next_status is None:
        return Turn.JOB_DONE
    if next_status is StageStatus.WAITING:
        return Turn.HOLD
    if next_status is StageStatus.CREATED:
        return Turn.ACTIVATE if next_total > 0 else Turn.COMPLETE_EMPTY
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
