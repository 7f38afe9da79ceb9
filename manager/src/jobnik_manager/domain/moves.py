"""Every status change of a job, stage or task, declared once: what it writes and what it
records.

A `Move` is one (entity, from, to) change made by an actor. Declaring one checks it
against the transition tables (`domain.transitions`), so an illegal move cannot be
built, let alone made (building one raises `IllegalTransition`, the refusal a client
is given). Each path that changes a status (the ORM's in `services`, replay,
maintenance, and the hand-tuned PostgreSQL statements in db/sql/, which are given the
statuses they write and log from here) takes from its move:

- `columns(now)`: the columns the change writes (status, update time, the end of a
  final status, a final task leaving the claim index), and `starts`: whether it stamps
  a start time where there is none yet;
- `event(...)`: its event row, column for column (`EVENT_COLUMNS`), with the principal
  that made it passed in, never read here;
- its lifecycle message follows from the event row (`domain.announcements`).

The moves the hot statements make are named below (`TASK_CLAIMED`, `STAGE_STARTED`,
...); tests run every path and check that each row it logged is a declared, legal move
(tests/integration/test_every_move.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from .errors import IllegalTransition
from .statuses import JobStatus, StageStatus, TaskStatus
from .transitions import (
    Actor,
    creation_allowed,
    job_may,
    stage_may,
    task_may,
)


class Entity(StrEnum):
    JOB = "JOB"
    STAGE = "STAGE"
    TASK = "TASK"


# An event row's columns, in the order every path writes them.
EVENT_COLUMNS = (
    "job_id",
    "entity",
    "entity_id",
    "stage_id",
    "task_id",
    "from_status",
    "to_status",
    "attempt",
    "lease_id",
    "worker",
    "reason",
    "time",
    "principal",
)

_STATUS_OF: dict[Entity, type[JobStatus] | type[StageStatus] | type[TaskStatus]] = {
    Entity.JOB: JobStatus,
    Entity.STAGE: StageStatus,
    Entity.TASK: TaskStatus,
}
_MAY: dict[Entity, Callable[..., bool]] = {
    Entity.JOB: job_may,
    Entity.STAGE: stage_may,
    Entity.TASK: task_may,
}


@dataclass(frozen=True, slots=True)
class Move:
    """`entity` from `source` (None: created) to `target`, made by `actor`."""

    entity: Entity
    source: str | None
    target: str
    actor: Actor

    def __post_init__(self) -> None:
        status = _STATUS_OF[self.entity]
        target = status(self.target)
        if self.source is None:
            legal = creation_allowed(self.entity.value, target)
        else:
            legal = _MAY[self.entity](status(self.source), target, self.actor)
        if not legal:
            raise IllegalTransition(self.entity.value, str(self.source), self.target)

    @property
    def final(self) -> bool:
        return self.target in _FINAL

    @property
    def starts(self) -> bool:
        """A job or stage starts at its first IN_PROGRESS (its start time, if none yet)."""
        return self.entity is not Entity.TASK and self.target == "IN_PROGRESS"

    def columns(self, now: datetime) -> dict[str, Any]:
        """The columns the move writes.

        A final status ends the row, a way out of one (a replay) takes its end back; a
        final task leaves the claim index in the same write that settles it, so one made
        claimable meanwhile cannot stay in it; a claimed one leaves it too, and starts
        its attempt."""
        written: dict[str, Any] = {"status": _STATUS_OF[self.entity](self.target)}
        written["update_time"] = now
        if self.final:
            written["end_time"] = now
        elif self.source in _FINAL:
            written["end_time"] = None
        if self.entity is Entity.TASK and (self.final or self.target == "IN_PROGRESS"):
            written["claimable"] = False
        if self.entity is Entity.TASK and self.target == "IN_PROGRESS":
            written["start_time"] = now  # each attempt's own start
        return written

    def event(
        self,
        *,
        job_id: uuid.UUID,
        entity_id: uuid.UUID,
        now: datetime,
        principal: str | None,
        stage_id: uuid.UUID | None = None,
        attempt: int | None = None,
        lease_id: uuid.UUID | None = None,
        worker: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Its event row, in `EVENT_COLUMNS` order. A stage's and a task's name their
        stage; a task's names itself as its task too."""
        if self.entity is Entity.STAGE:
            stage_id = entity_id
        return {
            "job_id": job_id,
            "entity": self.entity,
            "entity_id": entity_id,
            "stage_id": stage_id,
            "task_id": entity_id if self.entity is Entity.TASK else None,
            "from_status": self.source,
            "to_status": self.target,
            "attempt": attempt,
            "lease_id": lease_id,
            "worker": worker,
            "reason": reason,
            "time": now,
            "principal": principal,
        }


_FINAL = frozenset({"COMPLETED", "FAILED", "ABORTED"})


def task_entry(
    *,
    job_id: uuid.UUID,
    task_id: uuid.UUID,
    stage_id: uuid.UUID,
    attempt: int,
    lease_id: uuid.UUID | None,
    worker: str | None,
    now: datetime,
    principal: str | None,
) -> dict[str, Any]:
    """The event row of an entry a task's worker adds to its history: no move (its
    statuses are NULL); `name`, `level`, `message` and `fields` are the entry's own."""
    return {
        "job_id": job_id,
        "entity": Entity.TASK,
        "entity_id": task_id,
        "stage_id": stage_id,
        "task_id": task_id,
        "from_status": None,
        "to_status": None,
        "attempt": attempt,
        "lease_id": lease_id,
        "worker": worker,
        "reason": None,
        "time": now,
        "principal": principal,
    }


def job_move(source: JobStatus | None, target: JobStatus, actor: Actor = Actor.SYSTEM) -> Move:
    return Move(Entity.JOB, source, target, actor)


def stage_move(
    source: StageStatus | None, target: StageStatus, actor: Actor = Actor.SYSTEM
) -> Move:
    return Move(Entity.STAGE, source, target, actor)


def task_move(source: TaskStatus | None, target: TaskStatus, actor: Actor = Actor.SYSTEM) -> Move:
    return Move(Entity.TASK, source, target, actor)


J, S, T = JobStatus, StageStatus, TaskStatus

JOB_CREATED = job_move(None, J.PENDING)
TASK_CREATED = task_move(None, T.PENDING)

# The moves the hot statements make (db/sql/claim.sql and complete.sql), named.
TASK_CLAIMED = task_move(T.PENDING, T.IN_PROGRESS)
TASK_RECLAIMED = task_move(T.RETRIED, T.IN_PROGRESS)
CLAIMS = (TASK_CLAIMED, TASK_RECLAIMED)
STAGE_STARTED = stage_move(S.PENDING, S.IN_PROGRESS)
JOB_STARTED = job_move(J.PENDING, J.IN_PROGRESS)
TASK_COMPLETED = task_move(T.IN_PROGRESS, T.COMPLETED, Actor.USER)
