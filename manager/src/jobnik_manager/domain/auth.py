"""Who may do what: roles, principals and the rules between them. Pure: the facts about
the job, stage or task a request names are looked up by the caller.

- producer: creates jobs, stages and tasks; reads and controls (pause, resume, abort,
  priority, user metadata, delete, cancelling a task) only the jobs it owns;
- worker: claims, heartbeats and reports tasks and writes their user metadata (where
  the SDK records a handler's progress), of its stage types when it is limited to
  some; reads the jobs, stages and tasks of those types; nothing else;
- operator: reads everything; approves, pauses, resumes, aborts, retries, deletes, and
  cancels tasks; pauses and resumes stage types;
- admin: all of that, and manages tokens.
"""

from __future__ import annotations

import contextvars
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

TOKEN_PREFIX = "jnk_"


class Role(StrEnum):
    PRODUCER = "producer"
    WORKER = "worker"
    OPERATOR = "operator"
    ADMIN = "admin"


class Action(StrEnum):
    LIST = "list"  # job, stage and task lists (a producer's show its own jobs only)
    READ = "read"  # one job, stage or task
    CREATE = "create"  # a job, or stages and tasks of a job
    CONTROL = "control"  # pause, resume, abort, delete, cancel a task
    EDIT = "edit"  # priority, a job's or stage's user metadata
    ANNOTATE = "annotate"  # a task's user metadata
    APPROVE = "approve"
    QUEUES = "queues"  # pause and resume a stage type, for every job; steer OJS workers
    RETRY = "retry"
    WORK = "work"  # claim, heartbeat, report, task events
    ADMIN = "admin"  # tokens


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    role: Role
    # A worker token's stage types; empty: any.
    stage_types: frozenset[str] = field(default_factory=frozenset)

    def may_work_on(self, stage_types: Iterable[str]) -> bool:
        return not self.stage_types or set(stage_types) <= self.stage_types


@dataclass(frozen=True, slots=True)
class Facts:
    """What the request's job, stage or task is: its job's owner and the stage types it
    concerns (a job's: all of its stages'). `known` is False when nothing was named or
    found (the route answers 404 for an id that names nothing)."""

    known: bool = False
    owner: str | None = None
    stage_types: frozenset[str] = frozenset()


_BY_ROLE = {
    Role.PRODUCER: {
        Action.LIST,
        Action.READ,
        Action.CREATE,
        Action.CONTROL,
        Action.EDIT,
        Action.ANNOTATE,
    },
    # A handler's progress goes to its task's user metadata (the SDK's
    # `update_progress`): a worker that may report a task may annotate it.
    Role.WORKER: {Action.READ, Action.WORK, Action.ANNOTATE},
    Role.OPERATOR: {
        Action.LIST,
        Action.READ,
        Action.CONTROL,
        Action.APPROVE,
        Action.RETRY,
        Action.QUEUES,
    },
    Role.ADMIN: set(Action),
}


def needs_facts(principal: Principal, action: Action) -> bool:
    """Whether `allows` depends on the facts for this principal and action (it does not
    for what the role may never do, nor for admins, operators and unlimited workers)."""
    if action not in _BY_ROLE[principal.role]:
        return False
    return principal.role is Role.PRODUCER or (
        principal.role is Role.WORKER and bool(principal.stage_types)
    )


def allows(principal: Principal, action: Action, facts: Facts) -> bool:
    """Whether `principal` may do `action` to what `facts` describe."""
    if action not in _BY_ROLE[principal.role]:
        return False
    if not facts.known or principal.role in (Role.ADMIN, Role.OPERATOR):
        return True
    if principal.role is Role.PRODUCER:
        return facts.owner == principal.name
    # A worker: work only on tasks of its stage types, reads of what shares one of them.
    if not principal.stage_types:
        return True
    if action in (Action.WORK, Action.ANNOTATE):
        return facts.stage_types <= principal.stage_types
    return bool(facts.stage_types & principal.stage_types)


# Who the request being answered is (None with authentication off): set at the edge,
# read where a change is recorded (its event's `principal`) or an owner is given.
_acting: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "jobnik_principal", default=None
)


def acting() -> Principal | None:
    return _acting.get()


def act_as(principal: Principal | None) -> contextvars.Token[Principal | None]:
    return _acting.set(principal)


def stop_acting(token: contextvars.Token[Principal | None]) -> None:
    _acting.reset(token)


def new_token() -> str:
    """A token's text: 256 random bits."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
