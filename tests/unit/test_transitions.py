"""Every (from, to, actor) triple of the job, stage and task state machines.

The expected legality is written out by hand below, independently of the tables in
`jobnik_manager.domain.transitions`, so that a change to those tables fails a test.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection
from enum import StrEnum
from typing import Any

import pytest

from jobnik_manager.domain.errors import IllegalTransition, RuleViolation
from jobnik_manager.domain.statuses import JobStatus, Priority, StageStatus, TaskStatus
from jobnik_manager.domain.transitions import (
    Actor,
    ensure_job_transition,
    ensure_stage_transition,
    ensure_task_transition,
    job_may,
    stage_may,
    task_may,
)

# --------------------------------------------------------------------------------------
# Expected tables, written out literally (by wire value, not by enum member).
# --------------------------------------------------------------------------------------

EXPECTED_JOB_USER: frozenset[tuple[str, str]] = frozenset(
    {
        ("CREATED", "ABORTED"),
        ("PENDING", "PAUSED"),
        ("PENDING", "ABORTED"),
        ("IN_PROGRESS", "PAUSED"),
        ("IN_PROGRESS", "ABORTED"),
        ("PAUSED", "PENDING"),
        ("PAUSED", "ABORTED"),
    }
)
# The system may make every move a user may, and these.
EXPECTED_JOB_SYSTEM: frozenset[tuple[str, str]] = EXPECTED_JOB_USER | frozenset(
    {
        ("CREATED", "PENDING"),
        ("PENDING", "IN_PROGRESS"),
        ("PENDING", "COMPLETED"),
        ("PENDING", "FAILED"),
        ("IN_PROGRESS", "COMPLETED"),
        ("IN_PROGRESS", "FAILED"),
        ("PAUSED", "FAILED"),
        ("PAUSED", "IN_PROGRESS"),
        ("PAUSED", "COMPLETED"),
    }
)

EXPECTED_STAGE_USER: frozenset[tuple[str, str]] = frozenset(
    {
        ("CREATED", "PENDING"),
        ("WAITING", "PENDING"),
    }
)
EXPECTED_STAGE_SYSTEM: frozenset[tuple[str, str]] = EXPECTED_STAGE_USER | frozenset(
    {
        ("CREATED", "ABORTED"),
        ("WAITING", "ABORTED"),
        ("PENDING", "IN_PROGRESS"),
        ("PENDING", "COMPLETED"),
        ("PENDING", "ABORTED"),
        ("IN_PROGRESS", "COMPLETED"),
        ("IN_PROGRESS", "FAILED"),
        ("IN_PROGRESS", "ABORTED"),
    }
)

EXPECTED_TASK_USER: frozenset[tuple[str, str]] = frozenset(
    {
        ("IN_PROGRESS", "COMPLETED"),
        ("IN_PROGRESS", "FAILED"),
        ("IN_PROGRESS", "RETRIED"),
        # Cancelling one task (an extension): waiting, to run again, or running.
        ("PENDING", "ABORTED"),
        ("RETRIED", "ABORTED"),
        ("IN_PROGRESS", "ABORTED"),
    }
)
EXPECTED_TASK_SYSTEM: frozenset[tuple[str, str]] = EXPECTED_TASK_USER | frozenset(
    {
        ("CREATED", "PENDING"),
        ("CREATED", "ABORTED"),
        ("PENDING", "IN_PROGRESS"),
        ("RETRIED", "IN_PROGRESS"),
    }
)

# A replay of a failed job: its failed stage runs again, and that stage's tasks that
# failed or were aborted wait for a claim.
EXPECTED_JOB_REPLAY = {("FAILED", "IN_PROGRESS")}
EXPECTED_STAGE_REPLAY = {("FAILED", "IN_PROGRESS")}
EXPECTED_TASK_REPLAY = {("FAILED", "PENDING"), ("ABORTED", "PENDING")}

EXPECTED = {
    (JobStatus, Actor.REPLAY): EXPECTED_JOB_REPLAY,
    (StageStatus, Actor.REPLAY): EXPECTED_STAGE_REPLAY,
    (TaskStatus, Actor.REPLAY): EXPECTED_TASK_REPLAY,
    (JobStatus, Actor.USER): EXPECTED_JOB_USER,
    (JobStatus, Actor.SYSTEM): EXPECTED_JOB_SYSTEM,
    (StageStatus, Actor.USER): EXPECTED_STAGE_USER,
    (StageStatus, Actor.SYSTEM): EXPECTED_STAGE_SYSTEM,
    (TaskStatus, Actor.USER): EXPECTED_TASK_USER,
    (TaskStatus, Actor.SYSTEM): EXPECTED_TASK_SYSTEM,
}

FINAL_WIRE_VALUES = ("COMPLETED", "FAILED", "ABORTED")


def _cases(kind: type[StrEnum]) -> list[Any]:
    """Every (from, to, actor, expected) for `kind`, with readable ids."""
    out = []
    for current, target, actor in itertools.product(kind, kind, Actor):
        legal = (current.value, target.value) in EXPECTED[(kind, actor)]
        out.append(
            pytest.param(
                current,
                target,
                actor,
                legal,
                id=f"{actor.value}:{current.value}->{target.value}",
            )
        )
    return out


JOB_CASES = _cases(JobStatus)
STAGE_CASES = _cases(StageStatus)
TASK_CASES = _cases(TaskStatus)


# --------------------------------------------------------------------------------------
# Sanity of the hand-written tables themselves (so a typo cannot silently pass).
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "actor"),
    [(k, a) for k in (JobStatus, StageStatus, TaskStatus) for a in Actor],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_expected_tables_only_name_real_statuses(kind: type[StrEnum], actor: Actor) -> None:
    values = {s.value for s in kind}
    for current, target in EXPECTED[(kind, actor)]:
        assert current in values
        assert target in values
        assert current != target
        # Only a replay leaves a final status, and it leaves nothing else.
        assert (current in FINAL_WIRE_VALUES) is (actor is Actor.REPLAY)


@pytest.mark.parametrize("kind", [JobStatus, StageStatus, TaskStatus], ids=lambda k: k.__name__)
def test_expected_user_moves_are_a_subset_of_system_moves(kind: type[StrEnum]) -> None:
    assert EXPECTED[(kind, Actor.USER)] <= EXPECTED[(kind, Actor.SYSTEM)]


def test_expected_table_sizes() -> None:
    assert len(EXPECTED_JOB_USER) == 7
    assert len(EXPECTED_JOB_SYSTEM) == 16
    assert len(EXPECTED_STAGE_USER) == 2
    assert len(EXPECTED_STAGE_SYSTEM) == 10
    assert len(EXPECTED_TASK_USER) == 6
    assert len(EXPECTED_TASK_SYSTEM) == 10


def test_case_counts_cover_every_pair_and_actor() -> None:
    assert len(JOB_CASES) == len(JobStatus) ** 2 * 3 == 147
    assert len(STAGE_CASES) == len(StageStatus) ** 2 * 3 == 147
    assert len(TASK_CASES) == len(TaskStatus) ** 2 * 3 == 147


# --------------------------------------------------------------------------------------
# Boolean predicates.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("current", "target", "actor", "legal"), JOB_CASES)
def test_job_may(current: JobStatus, target: JobStatus, actor: Actor, legal: bool) -> None:
    assert job_may(current, target, actor) is legal


@pytest.mark.parametrize(("current", "target", "actor", "legal"), STAGE_CASES)
def test_stage_may(current: StageStatus, target: StageStatus, actor: Actor, legal: bool) -> None:
    assert stage_may(current, target, actor) is legal


@pytest.mark.parametrize(("current", "target", "actor", "legal"), TASK_CASES)
def test_task_may(current: TaskStatus, target: TaskStatus, actor: Actor, legal: bool) -> None:
    assert task_may(current, target, actor) is legal


# --------------------------------------------------------------------------------------
# ensure_* functions.
# --------------------------------------------------------------------------------------


def _check_ensure(
    ensure: Callable[..., None],
    entity: str,
    current: StrEnum,
    target: StrEnum,
    actor: Actor,
    legal: bool,
) -> None:
    if legal:
        ensure(current, target, actor)  # does not raise
        return
    with pytest.raises(IllegalTransition) as info:
        ensure(current, target, actor)
    err = info.value
    assert isinstance(err, RuleViolation)
    assert err.http_status == 400
    assert err.code == f"ILLEGAL_{entity}_STATUS_TRANSITION"
    expected_message = f"Illegal status transition from {current.value} to {target.value}"
    assert err.message == expected_message
    assert str(err) == expected_message


@pytest.mark.parametrize(("current", "target", "actor", "legal"), JOB_CASES)
def test_ensure_job_transition(
    current: JobStatus, target: JobStatus, actor: Actor, legal: bool
) -> None:
    _check_ensure(ensure_job_transition, "JOB", current, target, actor, legal)


@pytest.mark.parametrize(("current", "target", "actor", "legal"), STAGE_CASES)
def test_ensure_stage_transition(
    current: StageStatus, target: StageStatus, actor: Actor, legal: bool
) -> None:
    _check_ensure(ensure_stage_transition, "STAGE", current, target, actor, legal)


@pytest.mark.parametrize(("current", "target", "actor", "legal"), TASK_CASES)
def test_ensure_task_transition(
    current: TaskStatus, target: TaskStatus, actor: Actor, legal: bool
) -> None:
    _check_ensure(ensure_task_transition, "TASK", current, target, actor, legal)


@pytest.mark.parametrize("actor", list(Actor))
def test_completed_to_aborted_job_message_is_exact(actor: Actor) -> None:
    with pytest.raises(IllegalTransition) as info:
        ensure_job_transition(JobStatus.COMPLETED, JobStatus.ABORTED, actor)
    assert info.value.message == "Illegal status transition from COMPLETED to ABORTED"
    assert str(info.value) == "Illegal status transition from COMPLETED to ABORTED"
    assert info.value.code == "ILLEGAL_JOB_STATUS_TRANSITION"
    assert info.value.http_status == 400


@pytest.mark.parametrize(
    ("ensure", "current", "target", "code"),
    [
        (
            ensure_job_transition,
            JobStatus.FAILED,
            JobStatus.PENDING,
            "ILLEGAL_JOB_STATUS_TRANSITION",
        ),
        (
            ensure_stage_transition,
            StageStatus.COMPLETED,
            StageStatus.PENDING,
            "ILLEGAL_STAGE_STATUS_TRANSITION",
        ),
        (
            ensure_task_transition,
            TaskStatus.ABORTED,
            TaskStatus.PENDING,
            "ILLEGAL_TASK_STATUS_TRANSITION",
        ),
    ],
    ids=["job", "stage", "task"],
)
def test_error_codes_per_entity(
    ensure: Callable[..., None], current: StrEnum, target: StrEnum, code: str
) -> None:
    with pytest.raises(IllegalTransition) as info:
        ensure(current, target, Actor.SYSTEM)
    assert info.value.code == code


# --------------------------------------------------------------------------------------
# Status properties and priority ordering.
# --------------------------------------------------------------------------------------


def _property_cases(statuses: type[StrEnum], name: str, true_for: Collection[str]) -> list[Any]:
    """One case a status: the property `name` holds for the statuses in `true_for` only."""
    return [
        pytest.param(status, name, status.value in true_for, id=f"{status}-{name}")
        for status in statuses
    ]


@pytest.mark.parametrize(
    ("status", "name", "expected"),
    [
        *_property_cases(JobStatus, "is_final", FINAL_WIRE_VALUES),
        *_property_cases(StageStatus, "is_final", FINAL_WIRE_VALUES),
        *_property_cases(StageStatus, "is_active", {"PENDING", "IN_PROGRESS"}),
        *_property_cases(TaskStatus, "is_final", FINAL_WIRE_VALUES),
        *_property_cases(TaskStatus, "is_claimable", {"PENDING", "RETRIED"}),
    ],
)
def test_status_properties(status: StrEnum, name: str, expected: bool) -> None:
    assert getattr(status, name) is expected


def test_property_tables_cover_every_status() -> None:
    assert {s.value for s in JobStatus} == {
        "CREATED",
        "PENDING",
        "IN_PROGRESS",
        "PAUSED",
        "COMPLETED",
        "FAILED",
        "ABORTED",
    }
    assert {s.value for s in StageStatus} == {
        "CREATED",
        "WAITING",
        "PENDING",
        "IN_PROGRESS",
        "COMPLETED",
        "FAILED",
        "ABORTED",
    }
    assert {s.value for s in TaskStatus} == {
        "CREATED",
        "PENDING",
        "IN_PROGRESS",
        "RETRIED",
        "COMPLETED",
        "FAILED",
        "ABORTED",
    }
    assert {p.value for p in Priority} == {"VERY_HIGH", "HIGH", "MEDIUM", "LOW", "VERY_LOW"}


@pytest.mark.parametrize(
    ("kind", "may"),
    [(JobStatus, job_may), (StageStatus, stage_may), (TaskStatus, task_may)],
    ids=["job", "stage", "task"],
)
def test_no_transition_out_of_a_final_status_but_a_replay(
    kind: type[StrEnum], may: Callable[..., bool]
) -> None:
    for current in kind:
        if current.value not in FINAL_WIRE_VALUES:
            continue
        for target, actor in itertools.product(kind, (Actor.USER, Actor.SYSTEM)):
            assert not may(current, target, actor)


PRIORITY_ORDER = ["VERY_HIGH", "HIGH", "MEDIUM", "LOW", "VERY_LOW"]


@pytest.mark.parametrize(
    ("higher", "lower"),
    [
        (PRIORITY_ORDER[i], PRIORITY_ORDER[j])
        for i in range(len(PRIORITY_ORDER))
        for j in range(len(PRIORITY_ORDER))
        if i < j
    ],
)
def test_priority_rank_orders_higher_priority_first(higher: str, lower: str) -> None:
    assert Priority(higher).rank < Priority(lower).rank


def test_priority_sorting_by_rank() -> None:
    shuffled = [Priority.LOW, Priority.VERY_HIGH, Priority.VERY_LOW, Priority.MEDIUM, Priority.HIGH]
    assert [p.value for p in sorted(shuffled, key=lambda p: p.rank)] == PRIORITY_ORDER


def test_priority_ranks_are_distinct_ints() -> None:
    ranks = [p.rank for p in Priority]
    assert all(isinstance(r, int) for r in ranks)
    assert len(set(ranks)) == len(ranks)
