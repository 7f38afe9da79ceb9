"""Who may move a job, stage or task from one status to another.

A final status has no way out here but one: replaying a failed job, whose moves
(`REPLAYED`) only the REPLAY actor makes.

Each table maps a legal (from, to) pair to the actor allowed to make it. USER moves
arrive over the API; SYSTEM moves are consequences the manager derives (a claim, a
cascade, a stage finishing). Anything absent from a table is illegal.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar

from .wire import JobStatus, StageStatus, TaskStatus


class Actor(StrEnum):
    USER = "USER"
    SYSTEM = "SYSTEM"
    # Replaying a failed job: the only way out of a final status.
    REPLAY = "REPLAY"


J, S, T = JobStatus, StageStatus, TaskStatus
USER, SYSTEM = Actor.USER, Actor.SYSTEM

JOB_TRANSITIONS: dict[tuple[JobStatus, JobStatus], Actor] = {
    (J.CREATED, J.PENDING): SYSTEM,
    (J.CREATED, J.ABORTED): USER,
    (J.PENDING, J.IN_PROGRESS): SYSTEM,  # first claim
    (J.PENDING, J.COMPLETED): SYSTEM,  # a resumed job whose stages were all done
    (J.PENDING, J.FAILED): SYSTEM,
    (J.PENDING, J.PAUSED): USER,
    (J.PENDING, J.ABORTED): USER,
    (J.IN_PROGRESS, J.COMPLETED): SYSTEM,
    (J.IN_PROGRESS, J.FAILED): SYSTEM,
    (J.IN_PROGRESS, J.PAUSED): USER,
    (J.IN_PROGRESS, J.ABORTED): USER,
    (J.PAUSED, J.PENDING): USER,  # resume; the job then takes the status its stages imply
    (J.PAUSED, J.IN_PROGRESS): SYSTEM,
    (J.PAUSED, J.COMPLETED): SYSTEM,
    (J.PAUSED, J.FAILED): SYSTEM,  # a running task failed for good while paused
    (J.PAUSED, J.ABORTED): USER,
}

STAGE_TRANSITIONS: dict[tuple[StageStatus, StageStatus], Actor] = {
    (S.CREATED, S.PENDING): USER,  # also SYSTEM, when the previous stage completes
    (S.CREATED, S.ABORTED): SYSTEM,
    (S.WAITING, S.PENDING): USER,  # approval
    (S.WAITING, S.ABORTED): SYSTEM,
    (S.PENDING, S.IN_PROGRESS): SYSTEM,
    (S.PENDING, S.COMPLETED): SYSTEM,  # an empty stage whose turn came
    (S.PENDING, S.ABORTED): SYSTEM,
    (S.IN_PROGRESS, S.COMPLETED): SYSTEM,
    (S.IN_PROGRESS, S.FAILED): SYSTEM,
    (S.IN_PROGRESS, S.ABORTED): SYSTEM,
}

TASK_TRANSITIONS: dict[tuple[TaskStatus, TaskStatus], Actor] = {
    (T.CREATED, T.PENDING): SYSTEM,
    (T.CREATED, T.ABORTED): SYSTEM,
    (T.PENDING, T.IN_PROGRESS): SYSTEM,  # claim
    (T.PENDING, T.ABORTED): USER,  # cancelled on its own; also SYSTEM, in a cascade
    (T.RETRIED, T.IN_PROGRESS): SYSTEM,
    (T.RETRIED, T.ABORTED): USER,
    (T.IN_PROGRESS, T.COMPLETED): USER,
    (T.IN_PROGRESS, T.FAILED): USER,
    (T.IN_PROGRESS, T.RETRIED): USER,  # a FAILED report with attempts left, or retry-later
    (T.IN_PROGRESS, T.ABORTED): USER,  # its holder hears of it at its next heartbeat
}

# The statuses a row may be created in.
CREATED_AS: dict[str, frozenset[str]] = {
    "JOB": frozenset({J.PENDING}),
    "STAGE": frozenset({S.CREATED, S.PENDING, S.WAITING}),
    "TASK": frozenset({T.CREATED, T.PENDING}),
}

# A replay: the failed job and its failed stage run again, and that stage's tasks that
# failed for good or were aborted wait to be claimed once more.
REPLAYED: dict[str, frozenset[tuple[str, str]]] = {
    "JOB": frozenset({(J.FAILED, J.IN_PROGRESS)}),
    "STAGE": frozenset({(S.FAILED, S.IN_PROGRESS)}),
    "TASK": frozenset({(T.FAILED, T.PENDING), (T.ABORTED, T.PENDING)}),
}


def creation_allowed(entity: str, target: str) -> bool:
    return target in CREATED_AS[entity]


def replay_allowed(entity: str, source: str, target: str) -> bool:
    return (source, target) in REPLAYED[entity]


# Statuses a user may ask for at all; other targets are refused before any lookup.
USER_JOB_TARGETS = frozenset({J.PENDING, J.PAUSED, J.ABORTED})
USER_STAGE_TARGETS = frozenset({S.PENDING})
USER_TASK_TARGETS = frozenset({T.COMPLETED, T.FAILED, T.RETRIED, T.ABORTED})


_E = TypeVar("_E", JobStatus, StageStatus, TaskStatus)


def _allowed(table: Mapping[tuple[_E, _E], Actor], current: _E, target: _E, actor: Actor) -> bool:
    granted = table.get((current, target))
    if granted is None:
        return False
    # The system may make every legal move; a user only the ones granted to users.
    return actor is SYSTEM or granted is USER


def job_may(current: JobStatus, target: JobStatus, actor: Actor) -> bool:
    if actor is Actor.REPLAY:
        return replay_allowed("JOB", current, target)
    return _allowed(JOB_TRANSITIONS, current, target, actor)


def stage_may(current: StageStatus, target: StageStatus, actor: Actor) -> bool:
    if actor is Actor.REPLAY:
        return replay_allowed("STAGE", current, target)
    return _allowed(STAGE_TRANSITIONS, current, target, actor)


def task_may(current: TaskStatus, target: TaskStatus, actor: Actor) -> bool:
    if actor is Actor.REPLAY:
        return replay_allowed("TASK", current, target)
    return _allowed(TASK_TRANSITIONS, current, target, actor)
