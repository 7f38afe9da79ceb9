"""The transition tables (`jobnik_protocol.transitions`, which the SDK holds too), and
the checks that refuse an illegal move as the API answers it (`IllegalTransition`)."""

from __future__ import annotations

from jobnik_protocol.transitions import (
    CREATED_AS,
    JOB_TRANSITIONS,
    REPLAYED,
    STAGE_TRANSITIONS,
    TASK_TRANSITIONS,
    USER_JOB_TARGETS,
    USER_STAGE_TARGETS,
    USER_TASK_TARGETS,
    Actor,
    creation_allowed,
    job_may,
    replay_allowed,
    stage_may,
    task_may,
)

from .errors import IllegalTransition
from .statuses import JobStatus, StageStatus, TaskStatus

__all__ = [
    "CREATED_AS",
    "JOB_TRANSITIONS",
    "REPLAYED",
    "STAGE_TRANSITIONS",
    "TASK_TRANSITIONS",
    "USER_JOB_TARGETS",
    "USER_STAGE_TARGETS",
    "USER_TASK_TARGETS",
    "Actor",
    "creation_allowed",
    "ensure_job_transition",
    "ensure_stage_transition",
    "ensure_task_transition",
    "job_may",
    "replay_allowed",
    "stage_may",
    "task_may",
]


def ensure_job_transition(current: JobStatus, target: JobStatus, actor: Actor) -> None:
    if not job_may(current, target, actor):
        raise IllegalTransition("JOB", current, target)


def ensure_stage_transition(current: StageStatus, target: StageStatus, actor: Actor) -> None:
    if not stage_may(current, target, actor):
        raise IllegalTransition("STAGE", current, target)


def ensure_task_transition(current: TaskStatus, target: TaskStatus, actor: Actor) -> None:
    if not task_may(current, target, actor):
        raise IllegalTransition("TASK", current, target)
