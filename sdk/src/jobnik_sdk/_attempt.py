"""One attempt at a claimed task, as a Worker runs it: its handler, the progress its
heartbeats carry, how it is dropped, and what the handler's ending means."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from jobnik_protocol.logs import log_context

from ._client import ConsumerClient
from ._context import TaskContext
from ._exceptions import NonRetryableError, RetryLaterError
from ._handler import Handler
from ._logs import Log, TaskIds, task_logging
from ._metrics import HandlerOutcome
from ._models import Job, Stage, Task, TaskStatus
from ._reports import MAX_ERROR_TYPE, MAX_REASON, TaskReport

SHUTDOWN_REASON = "handed back: the worker shut down while it ran"
# Why a handler was stopped without a report, as metrics tell it.
DropKind = Literal["cancelled", "lost", "timed_out"]
_JSON_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to report: COMPLETED (with `result`), FAILED, or RETRIED after `delay`."""

    status: TaskStatus
    result: dict[str, Any] | None = None
    reason: str | None = None
    retryable: bool = True
    delay: timedelta | None = None
    error_type: str | None = None  # a failure's: the exception's class name

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
            task.id,
            lease_id=task.lease_id,
            reason=self.reason,
            retryable=self.retryable,
            error_type=self.error_type,
        )


def bad_result(task: Task, reason: str, log: Log, ids: TaskIds | None = None) -> Outcome:
    """FAILED for good: the same handler would build the same result again, so another
    attempt cannot help."""
    ids = ids or TaskIds(task.id)
    log.error("%s: %s", ids.name, reason, extra=ids.extra)
    return Outcome(TaskStatus.FAILED, reason=reason[:MAX_REASON], retryable=False)


class Progress(NamedTuple):
    """What a handler last said of how far it got."""

    percentage: int
    message: str | None = None


class Attempt:
    """A claimed task while its handler runs: the progress for its next heartbeat, and
    whether it was dropped (aborted, or its lease lost), which leaves it unreported."""

    def __init__(
        self,
        task: Task,
        *,
        log: Log,
        on_progress: Callable[[], None],
        stage: Stage | None = None,
        worker: str | None = None,
    ) -> None:
        self.task = task
        self.worker = worker
        # The attempt's lines name the task, and its job and stage type once known.
        self.ids = TaskIds(task.id)
        if stage is not None:
            self.knows(stage)
        self.handler: asyncio.Task[Any] | None = None
        self.dropped: str | None = None
        self.dropped_as: DropKind | None = None
        self._log = log
        self._on_progress = on_progress
        self._progress: Progress | None = None
        self._sent_progress: Progress | None = None
        self._time_limit: asyncio.TimerHandle | None = None
        if task.timeout_seconds is not None:
            # The manager fails the attempt once it has run that long (from the claim):
            # stop the handler then, rather than at the next heartbeat that hears of it.
            self._time_limit = asyncio.get_running_loop().call_later(
                task.timeout_seconds, self._time_is_up
            )

    def knows(self, stage: Stage) -> None:
        """The task's stage is known: its lines name the job and stage type from now on."""
        self.ids = TaskIds(self.task.id, stage.job_id, stage.type)

    # ---- running the handler ------------------------------------------------------------

    def context(
        self,
        job: Job,
        stage: Stage,
        client: ConsumerClient,
        *,
        logger: logging.Logger | None = None,
    ) -> TaskContext:
        """The handler's context: its progress goes to this attempt's heartbeats."""
        self.knows(stage)
        return TaskContext(
            task=self.task,
            job=job,
            stage=stage,
            client=client,
            logger=logger,
            on_progress=self.record_progress,
        )

    async def run(
        self, handler: Handler[Any], bind: Callable[[Task], Any], ctx: TaskContext
    ) -> Any:
        """Bind the task's data and await the handler, with the task as the current one
        for logging (see `_logs`) and its ids in the log context (see `logs`)
        throughout, so the handler's own lines carry them. Its ending is read by
        `outcome`."""
        with task_logging(self.ids), log_context(**self.log_ids):
            data = bind(self.task)
            if not ctx._logs_at(logging.INFO):
                return await handler(data, ctx)
            ctx.logger.info("started (attempt %d of %d)", ctx.attempt, self.task.max_attempts)
            began = time.monotonic()
            result = await handler(data, ctx)
            ctx.logger.info("done in %.2fs", time.monotonic() - began)
            return result

    # ---- while the handler runs ---------------------------------------------------------

    def record_progress(self, percentage: int, message: str | None = None) -> None:
        """Have the next heartbeat, sent early for it, carry `percentage` (and
        `message`)."""
        self._progress = Progress(percentage, message)
        self._on_progress()

    @property
    def progress(self) -> Progress | None:
        """What the handler last said of how far it got, if anything."""
        return self._progress

    @property
    def unsent_progress(self) -> Progress | None:
        """Progress that no heartbeat has carried yet, if any."""
        return self._progress if self._progress != self._sent_progress else None

    def progress_sent(self, progress: Progress) -> None:
        """A heartbeat carrying `progress` was answered."""
        self._sent_progress = progress

    def _time_is_up(self) -> None:
        if self.dropped is None and (self.handler is None or not self.handler.done()):
            self.drop(logging.WARNING, "it ran past its time limit", kind="timed_out")

    def ended(self) -> None:
        """The handler is done (or will not run): no time limit to keep any more."""
        if self._time_limit is not None:
            self._time_limit.cancel()

    def drop(self, level: int, why: str, *, kind: DropKind = "cancelled") -> None:
        """Cancel the handler and leave the task unreported: `kind` says whether the
        task was cancelled (its job aborted), lost (its lease, or the task itself) or
        timed out."""
        self.dropped = why
        self.dropped_as = kind
        running = self.handler is not None and not self.handler.done()
        if self.handler is not None:
            self.handler.cancel()
        self._log.log(
            level,
            "%s: %s; %s and the task is left unreported",
            self.name,
            why,
            "its handler is cancelled" if running else "its handler had finished",
            extra=self.extra,
        )

    @property
    def name(self) -> str:
        """The task, and its job and stage type once known, as log lines name them."""
        return self.ids.name

    @property
    def extra(self) -> dict[str, str]:
        """The ids a log record about the task carries as attributes."""
        known = {key: str(value) for key, value in self.log_ids.items() if value is not None}
        return {**self.ids.extra, **known}

    @property
    def log_ids(self) -> dict[str, object]:
        """The worker, the task, its stage, job, stage type and lease, as known."""
        return {
            "worker": self.worker,
            "stage_type": self.ids.stage_type,
            "task_id": self.task.id,
            "job_id": self.ids.job_id,
            "stage_id": self.task.stage_id,
            "lease_id": self.task.lease_id,
        }

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
            return Outcome(
                TaskStatus.FAILED,
                reason="CancelledError: handler cancelled",
                error_type="CancelledError",
            )
        exc = handler.exception()
        if exc is None:
            return self._completed(handler.result())
        where = f"{self.name} (attempt {self.task.attempts + 1} of {self.task.max_attempts})"
        extra = self.extra
        if isinstance(exc, NonRetryableError):
            self._log.error("%s failed and must not be retried: %s", where, exc, extra=extra)
            message = str(exc) or type(exc).__name__
            return Outcome(
                TaskStatus.FAILED,
                reason=message[:MAX_REASON],
                retryable=False,
                error_type=type(exc).__name__[:MAX_ERROR_TYPE],
            )
        if isinstance(exc, RetryLaterError):
            self._log.info("%s is handed back for %s: %s", where, exc.delay, exc, extra=extra)
            later = exc.reason[:MAX_REASON] if exc.reason else None
            return Outcome(TaskStatus.RETRIED, reason=later, delay=exc.delay)
        self._log.error("%s failed", where, exc_info=exc, extra=extra)
        error_type = type(exc).__name__[:MAX_ERROR_TYPE]
        reason = f"{type(exc).__name__}: {exc}"[:MAX_REASON]
        return Outcome(TaskStatus.FAILED, reason=reason, error_type=error_type)

    def ending(self, outcome: Outcome | None) -> tuple[HandlerOutcome, str | None]:
        """How the handler's run ended, for metrics, and for a failed attempt the error's
        class name: given what `outcome` made of it, or None when it was dropped.

        A failure that the manager will try again (attempts are left and the error does
        not forbid it) is "retried", one that ends the task "failed"."""
        handler = self.handler
        assert handler is not None and handler.done()
        last = self.task.attempts + 1 >= self.task.max_attempts
        failed: HandlerOutcome = "failed" if last else "retried"
        if self.dropped_as == "timed_out":
            return failed, "TimeoutError"
        if self.dropped_as is not None:
            return self.dropped_as, None
        if outcome is None:
            return "cancelled", None
        if handler.cancelled():
            if outcome.status is TaskStatus.RETRIED:
                return "cancelled", None  # by the worker's shutdown: handed back
            return failed, "CancelledError"
        exc = handler.exception()
        if isinstance(exc, RetryLaterError):
            return "retry_later", None
        if outcome.status is TaskStatus.COMPLETED:
            return "completed", None
        error_type = type(exc).__name__ if exc is not None else "InvalidResult"
        policy = self.task.retry_policy
        retries = outcome.retryable and (policy is None or policy.retries(outcome.error_type))
        return (failed if retries else "failed"), error_type

    def _completed(self, value: object) -> Outcome:
        if value is None:
            return Outcome(TaskStatus.COMPLETED)
        if not isinstance(value, BaseModel | Mapping):
            # Handlers used to have their return value ignored; keep completing them.
            self._log.warning(
                "%s: the handler returned a %s, not a dict or a pydantic model; "
                "the task is completed without a result",
                self.name,
                type(value).__name__,
                extra=self.extra,
            )
            return Outcome(TaskStatus.COMPLETED)
        try:
            if isinstance(value, BaseModel):
                result: Any = value.model_dump(mode="json")
            else:
                result = _JSON_OBJECT.dump_python(dict(value), mode="json")
        except PydanticSerializationError as exc:
            reason = f"the handler's result is not JSON: {exc}"
            return bad_result(self.task, reason, self._log, self.ids)
        if not isinstance(result, dict):
            reason = "the handler's result is not a JSON object"
            return bad_result(self.task, reason, self._log, self.ids)
        return Outcome(TaskStatus.COMPLETED, result=result)
