"""Stage summaries: task counts by status, and the percentage helper."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from jobnik_manager.domain.statuses import TaskStatus
from jobnik_manager.domain.summary import COUNTERS, Summary, percentage, summary_field

# TaskStatus wire value -> Summary field, written out by hand.
FIELD_OF = {
    "CREATED": "created",
    "PENDING": "pending",
    "IN_PROGRESS": "in_progress",
    "RETRIED": "retried",
    "COMPLETED": "completed",
    "FAILED": "failed",
    "ABORTED": "aborted",
}


def test_empty_summary() -> None:
    s = Summary()
    assert s.total == 0
    for name in COUNTERS:
        assert getattr(s, name) == 0
    assert s.open == 0


def test_one_counter_per_task_status_named_as_it() -> None:
    assert sorted(COUNTERS) == sorted(FIELD_OF.values())


def test_summary_is_frozen() -> None:
    s = Summary()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.pending = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("counts", "total"),
    [
        ({}, 0),
        ({"pending": 1}, 1),
        ({"in_progress": 2}, 2),
        ({"completed": 3}, 3),
        ({"failed": 4}, 4),
        ({"created": 5}, 5),
        ({"retried": 6}, 6),
        ({"aborted": 7}, 7),
        ({"pending": 1, "completed": 2}, 3),
        ({"created": 10, "aborted": 5, "failed": 1}, 16),
        (
            {
                "pending": 1,
                "in_progress": 2,
                "completed": 3,
                "failed": 4,
                "created": 5,
                "retried": 6,
                "aborted": 7,
            },
            28,
        ),
    ],
)
def test_total_is_the_sum_of_all_counts(counts: dict[str, int], total: int) -> None:
    assert Summary(**counts).total == total


@pytest.mark.parametrize("status", list(TaskStatus), ids=str)
def test_summary_field(status: TaskStatus) -> None:
    assert summary_field(status) == FIELD_OF[status.value]


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({}, Summary()),
        ({TaskStatus.PENDING: 2}, Summary(pending=2)),
        ({TaskStatus.IN_PROGRESS: 1, TaskStatus.RETRIED: 4}, Summary(in_progress=1, retried=4)),
        (
            {
                TaskStatus.CREATED: 1,
                TaskStatus.PENDING: 2,
                TaskStatus.IN_PROGRESS: 3,
                TaskStatus.RETRIED: 4,
                TaskStatus.COMPLETED: 5,
                TaskStatus.FAILED: 6,
                TaskStatus.ABORTED: 7,
            },
            Summary(
                created=1,
                pending=2,
                in_progress=3,
                retried=4,
                completed=5,
                failed=6,
                aborted=7,
            ),
        ),
    ],
)
def test_of(counts: dict[TaskStatus, int], expected: Summary) -> None:
    s = Summary.of(counts)
    assert s == expected
    assert s.total == sum(counts.values())
    for status, n in counts.items():
        assert getattr(s, summary_field(status)) == n


def test_counts_and_of_columns_go_both_ways() -> None:
    s = Summary(created=1, pending=2, in_progress=3, retried=4, completed=5, failed=6, aborted=7)
    assert list(s.counts()) == list(COUNTERS)
    assert Summary.of_columns(type("Row", (), s.counts())()) == s


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        (Summary(), 0),
        (Summary(completed=5, failed=1, aborted=2), 0),
        (Summary(completed=4, pending=1), 1),
        (Summary(completed=4, in_progress=2), 2),
        (Summary(completed=4, retried=3), 3),
        (Summary(completed=4, created=4), 4),
        (Summary(pending=1, in_progress=1, retried=1, created=1, aborted=7), 4),
    ],
)
def test_open_counts_the_tasks_not_final(summary: Summary, expected: int) -> None:
    assert summary.open == expected


@pytest.mark.parametrize(
    ("done", "total", "expected"),
    [
        (0, 0, 0),
        (5, 0, 0),
        (0, -1, 0),
        (0, 1, 0),
        (1, 1, 100),
        (1, 2, 50),
        (1, 3, 33),
        (2, 3, 66),
        (3, 3, 100),
        (1, 4, 25),
        (3, 4, 75),
        (1, 6, 16),
        (5, 6, 83),
        (1, 7, 14),
        (6, 7, 85),
        (2, 9, 22),
        (8, 9, 88),
        (99, 100, 99),
        (199, 200, 99),
        (1, 200, 0),
        (999, 1000, 99),
        (1, 1000, 0),
        (0, 10, 0),
        (10, 10, 100),
    ],
)
def test_percentage(done: int, total: int, expected: int) -> None:
    assert percentage(done, total) == expected


@pytest.mark.parametrize("total", range(1, 30))
def test_percentage_is_floor_for_every_fraction(total: int) -> None:
    for done in range(total + 1):
        result = percentage(done, total)
        assert isinstance(result, int)
        assert result * total <= 100 * done < (result + 1) * total


def test_the_sdk_reads_and_writes_a_summary_as_the_manager_does() -> None:
    from jobnik_sdk import Stage
    from jobnik_sdk import Summary as SdkSummary
    from jobnik_sdk._models import read_summary

    assert SdkSummary is Summary
    wire = {"pending": 1, "inProgress": 2, "completed": 3, "failed": 0, "created": 0}
    wire |= {"retried": 4, "aborted": 0, "total": 10}
    assert read_summary(wire) == Summary(pending=1, in_progress=2, completed=3, retried=4)
    # A v1 manager sends no `aborted`.
    assert read_summary({"completed": 1, "total": 1}) == Summary(completed=1)
    stage = Stage.model_validate(
        {"id": str(uuid.uuid4()), "jobId": str(uuid.uuid4()), "type": "t", "order": 1}
        | {"status": "IN_PROGRESS", "summary": wire}
    )
    assert stage.summary.total == 10
    assert stage.model_dump(mode="json", by_alias=True)["summary"] == wire
    with pytest.raises(ValueError):
        read_summary({"pending": "several"})
