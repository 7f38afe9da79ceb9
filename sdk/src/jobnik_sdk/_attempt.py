"""One attempt at a claimed task, as a Worker runs it: the heartbeat that keeps its lease
(and hears of an abort), what the handler's ending means, and the report of it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from ._backoff import Backoff
from ._consumer import ConsumerClient
from ._exceptions import (
    ApiError,
    IllegalTransitionError,
    LeaseLostError,
    NonRetryableError,
    NotFoundError,
    RetryLaterError,
    TransportError,
    ValidationError,
)
from ._models import Task, TaskStatus
from ._reports import MAX_REASON

SHUTDOWN_REASON = "worker shut down"
_JSON_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to report: COMPLETED (with `result`), FAILED, or RETRIED after `delay`."""

    status: TaskStatus
    result: dict[str, Any] | None = None
    reason: str | None = None
    retryable: bool = True
    delay: timedelta | None = None


class Attempt:
    """A claimed task's lease, heartbeat and report."""

    def __init__(
        self,
        client: ConsumerClient,
        task: Task,
        *,
        lease: timedelta,
        heartbeat_interval: timedelta,
        report_timeout: timedelta,
        backoff: Backoff,
        log: logging.Logger,
    ) -> None:
        self.task = task
        self._client = client
        self._lease = lease
        self._interval = heartbeat_interval.total_seconds()
        self._report_timeout = report_timeout.total_seconds()
        self._backoff = backoff
        self._log = log
        self._progress: int | None = None
        self._sent_progress: int | None = None
        self._progress_changed = asyncio.Event()
        self.dropped: str | None = None

    # ---- while the handler runs ---------------------------------------------------------

    def record_progress(self, percentage: int) -> None:
        """Have the next heartbeat, sent early for it, carry `percentage`."""
        self._progress = percentage
        self._progress_changed.set()

    async def keep_lease(self, handler: asyncio.Task[Any]) -> None:
        """Heartbeat until cancelled. When the task was aborted or its lease lost, cancel
        `handler` and mark the attempt dropped: nothing is reported for it."""
        if self.task.lease_id is None:
            return  # claimed without a lease: nothing to keep
        last = time.monotonic()
        while True:
            await self._until_next_beat(last)
            if handler.done():
                return  # its outcome is being reported; the report settles the lease
            progress = self._progress if self._progress != self._sent_progress else None
            self._progress_changed.clear()
            try:
                beat = await self._client.heartbeat(
                    self.task.id, self.task.lease_id, progress=progress, lease=self._lease
                )
            except LeaseLostError:
                self._drop(handler, logging.WARNING, "its lease was lost")
                return
            except NotFoundError:
                self._drop(handler, logging.WARNING, "it no longer exists")
                return
            except (TransportError, ApiError) as exc:
                self._log.warning("heartbeat of task %s failed: %s", self.task.id, exc)
            else:
                if progress is not None:
                    self._sent_progress = progress
                if beat.cancel_requested:
                    self._drop(handler, logging.INFO, "its job was aborted")
                    return
            last = time.monotonic()

    async def _until_next_beat(self, last: float) -> None:
        # A beat is due an interval after the last one, or a second after it (at most
        # an interval) when there is progress to send.
        due = last + self._interval
        if self._progress == self._sent_progress:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancellation
            # that arrives as the event is set, and this loop would outlive its task.
            with suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, due - time.monotonic())):
                    await self._progress_changed.wait()
        if self._progress != self._sent_progress:
            due = min(due, last + min(1.0, self._interval))
        await asyncio.sleep(max(0.0, due - time.monotonic()))

    def _drop(self, handler: asyncio.Task[Any], level: int, why: str) -> None:
        self.dropped = why
        running = not handler.done()
        handler.cancel()
        self._log.log(
            level,
            "task %s: %s; %s and the task is left unreported",
            self.task.id,
            why,
            "its handler is cancelled" if running else "its handler had finished",
        )

    # ---- once it has ended --------------------------------------------------------------

    def outcome(self, handler: asyncio.Task[Any], *, shutting_down: bool) -> Outcome:
        """What the handler's ending means for the task."""
        if handler.cancelled():
            # The worker cancels handlers only when it stops; otherwise the handler
            # let a cancellation of its own escape.
            reason = SHUTDOWN_REASON if shutting_down else "CancelledError: handler cancelled"
            return Outcome(TaskStatus.FAILED, reason=reason)
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
            return self._bad_result(f"the handler's result is not JSON: {exc}")
        if not isinstance(result, dict):
            return self._bad_result("the handler's result is not a JSON object")
        return Outcome(TaskStatus.COMPLETED, result=result)

    def _bad_result(self, reason: str) -> Outcome:
        # The same handler would build the same result again: another attempt cannot help.
        self._log.error("task %s: %s", self.task.id, reason)
        return Outcome(TaskStatus.FAILED, reason=reason[:MAX_REASON], retryable=False)

    async def report(self, outcome: Outcome) -> None:
        """Send the outcome under the task's lease, retrying for up to the report timeout
        while the manager cannot be reached or answers 5xx."""
        deadline = time.monotonic() + self._report_timeout
        step = 0
        while True:
            try:
                await self._send(outcome)
                return
            except LeaseLostError as exc:
                self._log.warning(
                    "task %s: lease lost before it could be reported %s: %s",
                    self.task.id,
                    outcome.status,
                    exc,
                )
                return
            except (IllegalTransitionError, NotFoundError) as exc:
                # Its job was aborted or deleted meanwhile, or an earlier try of this
                # very report got through before its answer was lost.
                self._log.warning(
                    "task %s could not be reported %s: %s", self.task.id, outcome.status, exc
                )
                return
            except ValidationError as exc:
                if outcome.result is None:
                    self._log.error("task %s report refused: %s", self.task.id, exc)
                    return
                # The manager refused the result (too large, say): the attempt cannot
                # succeed as it stands, so say so rather than leave the task to expire.
                reason = f"the manager refused the handler's result: {exc.message}"
                outcome = self._bad_result(reason)
            except (TransportError, ApiError) as exc:
                final = isinstance(exc, ApiError) and exc.status_code < 500
                step += 1
                if final or time.monotonic() >= deadline:
                    self._log.error(
                        "giving up reporting task %s %s: %s", self.task.id, outcome.status, exc
                    )
                    return
                self._log.warning(
                    "reporting task %s %s failed: %s; retrying", self.task.id, outcome.status, exc
                )
                await asyncio.sleep(self._backoff.delay(step).total_seconds())

    async def _send(self, outcome: Outcome) -> None:
        task_id, lease_id = self.task.id, self.task.lease_id
        if outcome.status is TaskStatus.COMPLETED:
            await self._client.complete(task_id, lease_id=lease_id, result=outcome.result)
        elif outcome.status is TaskStatus.RETRIED:
            assert outcome.delay is not None
            await self._client.retry_later(
                task_id, delay=outcome.delay, lease_id=lease_id, reason=outcome.reason
            )
        else:
            await self._client.fail(
                task_id, lease_id=lease_id, reason=outcome.reason, retryable=outcome.retryable
            )
