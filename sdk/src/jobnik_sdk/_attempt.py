"""One attempt at a claimed task, as a Worker runs it: its handler, the progress its
heartbeats carry, how it is dropped, and what the handler's ending means."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from ._exceptions import NonRetryableError, RetryLaterError
from ._models import Task, TaskStatus
from ._reports import MAX_REASON, TaskReport

SHUTDOWN_REASON = "handed back: the worker shut down while it ran"
_JSON_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to report: COMPLETED (with `result`), FAILED, or RETRIED after `delay`."""

    status: TaskStatus
    result: dict[str, Any] | None = None
    reason: str | None = None
    retryable: bool = True
    delay: timedelta | None = None

    def report(self, task: Task) -> TaskReport:
        """The report of this outcome, under the task's lease."""
        if self.status is TaskStatus.COMPLETED:
            return TaskReport.completed(task.id, lease_id=task.lease_id, result=self.result)
        if self.status is TaskStatus.RETRIED:
            assert self.delay is not None
            return TaskReport.retry_later(
                task.id, delay=self.delay, lease_id=task.lease_id, reason=self.reason
            )
        return TaskReport.failed(
            task.id, lease_id=task.lease_id, reason=self.reason, retryable=self.retryable
        )


def bad_result(task: Task, reason: str, log: logging.Logger) -> Outcome:
    """FAILED for good: the same handler would build the same result again, so another
    attempt cannot help."""
    log.error("task %s: %s", task.id, reason)
    return Outcome(TaskStatus.FAILED, reason=reason[:MAX_REASON], retryable=False)


class Attempt:
    """A claimed task while its handler runs: the progress for its next heartbeat, and
    whether it was dropped (aborted, or its lease lost), which leaves it unreported."""

    def __init__(self, task: Task, *, log: logging.Logger, on_progress: Callable[[], None]) -> None:
        self.task = task
        self.handler: asyncio.Task[Any] | None = None
        self.dropped: str | None = None
        self._log = log
        self._on_progress = on_progress
        self._progress: int | None = None
        self._sent_progress: int | None = None

    # ---- while the handler runs ---------------------------------------------------------

    def record_progress(self, percentage: int) -> None:
        """Have the next heartbeat, sent early for it, carry `percentage`."""
        self._progress = percentage
        self._on_progress()

    @property
    def unsent_progress(self) -> int | None:
        """Progress that no heartbeat has carried yet, if any."""
        return self._progress if self._progress != self._sent_progress else None

    def progress_sent(self, percentage: int) -> None:
        """A heartbeat carrying `percentage` was answered."""
        self._sent_progress = percentage

    def drop(self, level: int, why: str) -> None:
        """Cancel the handler and leave the task unreported."""
        self.dropped = why
        running = self.handler is not None and not self.handler.done()
        if self.handler is not None:
            self.handler.cancel()
        self._log.log(
            level,
            "task %s: %s; %s and the task is left unreported",
            self.task.id,
            why,
            "its handler is cancelled" if running else "its handler had finished",
        )

    # ---- once it has ended --------------------------------------------------------------

    def outcome(self, *, shutting_down: bool) -> Outcome:
        """What the handler's ending means for the task."""
        handler = self.handler
        assert handler is not None and handler.done()
        if handler.cancelled():
            if shutting_down:
                # The worker stopped it, not the task's own doing: offered again at once,
                # to another worker, without spending an attempt.
                return Outcome(TaskStatus.RETRIED, reason=SHUTDOWN_REASON, delay=timedelta(0))
            # Otherwise the handler let a cancellation of its own escape.
            return Outcome(TaskStatus.FAILED, reason="CancelledError: handler cancelled")
        exc = handler.exception()
        if exc is None:
            return self._completed(handler.result())
        where = f"task {self.task.id} (attempt {self.task.attempts + 1} of "
        where += f"{self.task.max_attempts})"
        if isinstance(exc, NonRetryableError):
            self._log.error("%s failed and must not be retried: %s", where, exc)
            message = str(exc) or type(exc).__name__
            return Outcome(TaskStatus.FAILED, reason=message[:MAX_REASON], retryable=False)
        if isinstance(exc, RetryLaterError):
            self._log.info("%s is handed back for %s: %s", where, exc.delay, exc)
            later = exc.reason[:MAX_REASON] if exc.reason else None
            return Outcome(TaskStatus.RETRIED, reason=later, delay=exc.delay)
        self._log.error("%s failed", where, exc_info=exc)
        return Outcome(TaskStatus.FAILED, reason=f"{type(exc).__name__}: {exc}"[:MAX_REASON])

    def _completed(self, value: object) -> Outcome:
        if value is None:
            return Outcome(TaskStatus.COMPLETED)
        if not isinstance(value, BaseModel | Mapping):
            # Handlers used to have their return value ignored; keep completing them.
            self._log.warning(
                "task %s: the handler returned a %s, not a dict or a pydantic model; "
                "the task is completed without a result",
                self.task.id,
                type(value).__name__,
            )
            return Outcome(TaskStatus.COMPLETED)
        try:
            if isinstance(value, BaseModel):
                result: Any = value.model_dump(mode="json")
            else:
                result = _JSON_OBJECT.dump_python(dict(value), mode="json")
        except PydanticSerializationError as exc:
            return bad_result(self.task, f"the handler's result is not JSON: {exc}", self._log)
        if not isinstance(result, dict):
            return bad_result(self.task, "the handler's result is not a JSON object", self._log)
        return Outcome(TaskStatus.COMPLETED, result=result)
