"""What a create asks for: a job, its stages and their tasks, as the use cases take them.

Plain values, built by the routes from the wire models, so the use cases know nothing of
the API's schemas.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar, overload

from ..domain.retry import RetryPolicy
from ..domain.statuses import Priority
from ..domain.tasks import DEFAULT_MAX_ATTEMPTS

T = TypeVar("T")


class Converted(Sequence[T]):
    """`items`, each converted only when read: a large create's tasks become specs as
    their rows stream into the database, and its rows become answers only if asked for."""

    def __init__(self, items: Sequence[Any], convert: Callable[[Any], T]) -> None:
        self._items = items
        self._convert = convert

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._convert(item) for item in self._items[index]]
        return self._convert(self._items[index])


# Not frozen: a create makes one per task, and a frozen dataclass sets each field
# through object.__setattr__, three times the time of a plain one.
@dataclass(slots=True)
class NewTask:
    data: dict[str, Any]
    user_metadata: dict[str, Any] = field(default_factory=dict)
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    traceparent: str | None = None
    tracestate: str | None = None
    # None: the stage's policy applies.
    retry_policy: RetryPolicy | None = None
    # Scheduled: not claimable before then (nor before its job's `not_before`).
    not_before: datetime | None = None
    # How long an attempt may run (None: its stage's default, else no limit).
    timeout_seconds: float | None = None
    # Never handed out from then on (nor after its job's `expires_at`).
    expires_at: datetime | None = None
    # Its id when the client chose it (an OJS job's); else a random one is made.
    id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class NewStage:
    type: str
    data: dict[str, Any]
    user_metadata: dict[str, Any] = field(default_factory=dict)
    start_as_waiting: bool = False
    traceparent: str | None = None
    tracestate: str | None = None
    tasks: Sequence[NewTask] = ()
    # The retry policy of its tasks that bring none.
    retry_policy: RetryPolicy | None = None
    # Created with an empty list of tasks, rather than none to add later: a first stage
    # passes at once, as a later empty stage does when its turn comes.
    without_tasks: bool = False
    # How many of its tasks may fail for good with the stage still completing (partly).
    allowed_failures: int = 0
    # The time limit of an attempt of its tasks that bring none.
    timeout_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class NewJob:
    name: str
    data: dict[str, Any]
    priority: Priority = Priority.MEDIUM
    user_metadata: dict[str, Any] = field(default_factory=dict)
    traceparent: str | None = None
    tracestate: str | None = None
    stages: Sequence[NewStage] = ()
    # An OJS job's own priority (-100 to 100): its tasks' place in the claim order,
    # finer than `priority` (domain/ranks.py).
    priority_number: int | None = None
    # Scheduled: none of its tasks claimable before then.
    not_before: datetime | None = None
    # Failed ("deadline exceeded") if not final by then.
    deadline: datetime | None = None
    # The token name creating it, when authentication is on.
    owner: str | None = None
    # Aborted ("expired") if none of its tasks started by then; its tasks' default.
    expires_at: datetime | None = None
    # One job per key: while the job holding it is not final, or for `unique_window`.
    unique_key: str | None = None
    unique_window: timedelta | None = None
