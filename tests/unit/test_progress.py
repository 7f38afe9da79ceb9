"""How stage and job statuses follow from their children."""

from __future__ import annotations

import pytest

from jobnik_manager.domain.progress import (
    Turn,
    job_percentage,
    next_stage_turn,
    resumed_job_status,
    stage_outcome,
)
from jobnik_manager.domain.statuses import JobStatus, StageStatus
from jobnik_manager.domain.summary import Summary

S = StageStatus

# --------------------------------------------------------------------------------------
# stage_outcome
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        (Summary(), None),
        (Summary(failed=1), S.FAILED),
        (Summary(failed=1, completed=9), S.FAILED),
        (Summary(failed=1, pending=3, in_progress=2), S.FAILED),
        (Summary(failed=2, retried=1), S.FAILED),
        (Summary(failed=1, aborted=1), S.FAILED),
        (Summary(completed=1), S.COMPLETED),
        (Summary(completed=7), S.COMPLETED),
        (Summary(completed=6, in_progress=1), None),
        (Summary(completed=6, pending=1), None),
        (Summary(completed=6, retried=1), None),
        (Summary(completed=6, created=1), None),
        # A task cancelled on its own counts as neither done nor failed.
        (Summary(completed=6, aborted=1), S.COMPLETED),
        (Summary(completed=6, aborted=1, pending=1), None),
        (Summary(pending=3), None),
        (Summary(in_progress=3), None),
        (Summary(retried=3), None),
        (Summary(created=3), None),
        (Summary(aborted=3), S.COMPLETED),
    ],
)
def test_stage_outcome(summary: Summary, expected: StageStatus | None) -> None:
    assert stage_outcome(summary) is expected


@pytest.mark.parametrize(
    ("summary", "allowed", "expected"),
    [
        (Summary(failed=1, completed=2), 1, S.COMPLETED),
        (Summary(failed=1, pending=1), 1, None),
        (Summary(failed=2, pending=1), 1, S.FAILED),
        (Summary(failed=3), 3, S.COMPLETED),
        (Summary(failed=1, aborted=1), 1, S.COMPLETED),
        (Summary(failed=1), 0, S.FAILED),
    ],
)
def test_stage_outcome_within_an_allowance_of_failures(
    summary: Summary, allowed: int, expected: StageStatus | None
) -> None:
    assert stage_outcome(summary, allowed) is expected


# --------------------------------------------------------------------------------------
# next_stage_turn
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("next_status", "next_total", "expected"),
    [
        (None, 0, Turn.JOB_DONE),
        (None, 5, Turn.JOB_DONE),
        (S.WAITING, 0, Turn.HOLD),
        (S.WAITING, 3, Turn.HOLD),
        (S.CREATED, 1, Turn.ACTIVATE),
        (S.CREATED, 10, Turn.ACTIVATE),
        (S.CREATED, 0, Turn.COMPLETE_EMPTY),
    ],
)
def test_next_stage_turn(next_status: StageStatus | None, next_total: int, expected: Turn) -> None:
    assert next_stage_turn(next_status, next_total) is expected


@pytest.mark.parametrize("next_total", [0, 1, 4])
@pytest.mark.parametrize(
    "next_status",
    [S.PENDING, S.IN_PROGRESS, S.COMPLETED, S.FAILED, S.ABORTED],
    ids=str,
)
def test_next_stage_turn_rejects_active_and_final(
    next_status: StageStatus, next_total: int
) -> None:
    with pytest.raises(ValueError, match=str(next_status)):
        next_stage_turn(next_status, next_total)


def test_next_stage_turn_cases_cover_every_stage_status() -> None:
    handled = {S.WAITING, S.CREATED}
    rejected = {S.PENDING, S.IN_PROGRESS, S.COMPLETED, S.FAILED, S.ABORTED}
    assert handled | rejected == set(StageStatus)
    assert not handled & rejected


# --------------------------------------------------------------------------------------
# job_percentage
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stages", "expected"),
    [
        ([], 0),
        ([S.PENDING], 0),
        ([S.COMPLETED], 100),
        ([S.FAILED], 0),
        ([S.COMPLETED, S.PENDING], 50),
        ([S.PENDING, S.COMPLETED], 50),
        ([S.COMPLETED, S.COMPLETED], 100),
        ([S.COMPLETED, S.IN_PROGRESS, S.CREATED], 33),
        ([S.COMPLETED, S.COMPLETED, S.WAITING], 66),
        ([S.COMPLETED, S.COMPLETED, S.COMPLETED], 100),
        ([S.COMPLETED, S.PENDING, S.CREATED, S.CREATED], 25),
        ([S.COMPLETED, S.COMPLETED, S.IN_PROGRESS, S.CREATED], 50),
        ([S.COMPLETED, S.COMPLETED, S.COMPLETED, S.PENDING], 75),
        ([S.COMPLETED, S.COMPLETED, S.COMPLETED, S.COMPLETED], 100),
        # Only COMPLETED counts as done.
        ([S.FAILED, S.ABORTED, S.IN_PROGRESS, S.COMPLETED], 25),
        ([S.ABORTED, S.ABORTED], 0),
    ],
)
def test_job_percentage(stages: list[StageStatus], expected: int) -> None:
    assert job_percentage(stages) == expected


@pytest.mark.parametrize("status", [s for s in StageStatus if s is not S.COMPLETED], ids=str)
def test_job_percentage_counts_only_completed(status: StageStatus) -> None:
    assert job_percentage([status]) == 0
    assert job_percentage([S.COMPLETED, status]) == 50


def test_job_percentage_accepts_tuples() -> None:
    assert job_percentage((S.COMPLETED, S.PENDING, S.PENDING)) == 33


# --------------------------------------------------------------------------------------
# resumed_job_status
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stages", "started", "expected"),
    [
        # No stages: nothing implies completion; falls back on `started`.
        ([], False, JobStatus.PENDING),
        ([], True, JobStatus.IN_PROGRESS),
        # Any failed stage fails the job, whatever else.
        ([S.FAILED], False, JobStatus.FAILED),
        ([S.FAILED], True, JobStatus.FAILED),
        ([S.COMPLETED, S.FAILED], True, JobStatus.FAILED),
        ([S.COMPLETED, S.FAILED, S.CREATED], False, JobStatus.FAILED),
        # All completed completes it.
        ([S.COMPLETED], False, JobStatus.COMPLETED),
        ([S.COMPLETED], True, JobStatus.COMPLETED),
        ([S.COMPLETED, S.COMPLETED, S.COMPLETED], True, JobStatus.COMPLETED),
        # Otherwise: IN_PROGRESS if a task was ever claimed, else PENDING.
        ([S.PENDING], False, JobStatus.PENDING),
        ([S.PENDING], True, JobStatus.IN_PROGRESS),
        ([S.IN_PROGRESS], True, JobStatus.IN_PROGRESS),
        ([S.COMPLETED, S.PENDING], True, JobStatus.IN_PROGRESS),
        ([S.COMPLETED, S.WAITING], True, JobStatus.IN_PROGRESS),
        ([S.COMPLETED, S.WAITING], False, JobStatus.PENDING),
        ([S.CREATED, S.CREATED], False, JobStatus.PENDING),
        ([S.WAITING], False, JobStatus.PENDING),
        ([S.COMPLETED, S.ABORTED], True, JobStatus.IN_PROGRESS),
        ([S.ABORTED], False, JobStatus.PENDING),
    ],
)
def test_resumed_job_status(stages: list[StageStatus], started: bool, expected: JobStatus) -> None:
    assert resumed_job_status(stages, started) is expected


@pytest.mark.parametrize("started", [False, True])
@pytest.mark.parametrize("other", list(StageStatus), ids=str)
def test_resumed_job_status_failure_wins(other: StageStatus, started: bool) -> None:
    assert resumed_job_status([other, S.FAILED], started) is JobStatus.FAILED
    assert resumed_job_status([S.FAILED, other], started) is JobStatus.FAILED
