"""Reports in batches: a Worker's outcomes go to the manager in one `report_many` call
per batch, and a task's report is done only once the answer (which means committed) is
back."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from ._attempt import Outcome, bad_result
from ._backoff import Backoff
from ._client import ConsumerClient
from ._clock import SYSTEM_CLOCK, Clock, wait_event
from ._exceptions import ApiError, JobnikTransportError, JobnikValidationError
from ._logs import Log, TaskIds
from ._metrics import Meter
from ._models import Task
from ._reports import TaskReport

# The field of a brief batch report, which a manager from before it refuses by name.
_BRIEF = "withTasks"

# What one batch report may carry, by the manager's limits.
MAX_REPORTS = 100
BATCHES_IN_FLIGHT = 2


@dataclass(slots=True, eq=False)
class _Pending:
    task: Task
    outcome: Outcome
    deadline: float
    queued_at: float
    done: asyncio.Future[None]
    ids: TaskIds
    report: TaskReport = field(init=False)
    # Sent before (or in place of a report that was): it has waited enough.
    tried: bool = False
    # Sent in a batch of its own, after the manager refused a batch it was part of.
    alone: bool = False

    def __post_init__(self) -> None:
        self.report = self.outcome.report(self.task)

    def finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class Reporter:
    """Sends a worker's reports in batches of up to `batch_size`, once a batch is full,
    no handler is left running (`running` counts them) whose report could join it, or
    its oldest report has waited `linger`. Up to two batches are in flight at a time;
    the reports that come in meanwhile make up the next one.

    As the manager answers each report: taken, or refused because the lease was lost,
    the task moved on or is gone (logged, and that is the end of it); a result it
    refuses as invalid is reported again as a non-retryable failure, as the handler
    cannot do better. A batch the manager refuses as a whole is sent again one report
    at a time, to find the culprit. A batch that does not get through (the manager is
    out of reach, or answers 5xx) is sent again with `backoff` until each report's
    `timeout`, counted from when it was handed in, runs out. A report that cannot be
    sent is never turned into a failed attempt.
    """

    def __init__(
        self,
        client: ConsumerClient,
        *,
        batch_size: int,
        linger: timedelta,
        timeout: timedelta,
        backoff: Backoff,
        running: Callable[[], int],
        log: Log,
        meter: Meter | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._client = client
        self._clock = clock
        self._meter = meter
        self._running = running
        self._batch_size = batch_size
        self._linger = linger.total_seconds()
        self._timeout = timeout.total_seconds()
        self._backoff = backoff
        self._log = log
        self._pending: deque[_Pending] = deque()
        self._arrived = asyncio.Event()
        self._send_now = asyncio.Event()
        self._hurry = False
        self._failures = 0
        # Answers without the tasks (`withTasks: false`), which nothing here reads, until a
        # manager from before them refuses the field.
        self._brief = True
        # Batches out at once: while one is on its way the next fills and goes too.
        self._out = asyncio.Semaphore(BATCHES_IN_FLIGHT)

    def submit(
        self, task: Task, outcome: Outcome, *, ids: TaskIds | None = None
    ) -> asyncio.Future[None]:
        """Queue the report of `outcome`; the future is done once the manager answered
        for it, or reporting it was given up. `ids` name the task in the log."""
        now = self._clock.monotonic()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ids = ids or TaskIds(task.id)
        self._pending.append(_Pending(task, outcome, now + self._timeout, now, done, ids))
        self._arrived.set()
        if self._complete():
            self._send_now.set()
        return done

    def hurry(self) -> None:
        """Send what comes in without lingering from now on: the worker is stopping."""
        self._hurry = True
        self._send_now.set()

    async def run(self) -> None:
        """Send batches until cancelled."""
        sending: set[asyncio.Task[None]] = set()
        try:
            while True:
                if not self._pending:
                    self._arrived.clear()
                    await self._arrived.wait()
                    continue
                # Reports that come in while the batches are out make up the next one.
                await self._out.acquire()
                if not self._pending:  # taken back by a batch that was refused
                    self._out.release()
                    continue
                await self._linger_for_more()
                send = asyncio.create_task(self._send_guarded(self._take()))
                sending.add(send)
                send.add_done_callback(sending.discard)
        finally:
            for send in sending:
                send.cancel()

    async def _send_guarded(self, batch: list[_Pending]) -> None:
        try:
            await self._send(batch)
        except Exception:
            # Handlers wait on these reports: the loop must outlive any surprise.
            self._log.exception("unexpected error while reporting %d task(s)", len(batch))
            for item in batch:
                item.finish()
        finally:
            self._out.release()

    def _complete(self) -> bool:
        """Whether waiting for more reports would be for nothing."""
        return self._hurry or len(self._pending) >= self._batch_size or not self._running()

    async def _linger_for_more(self) -> None:
        if self._pending[0].tried or self._complete():
            return
        remaining = self._pending[0].queued_at + self._linger - self._clock.monotonic()
        if remaining <= 0:
            return
        self._send_now.clear()
        await wait_event(self._send_now, remaining, self._clock)

    def _take(self) -> list[_Pending]:
        batch = [self._pending.popleft()]
        if batch[0].alone:
            return batch
        while self._pending and len(batch) < self._batch_size and not self._pending[0].alone:
            batch.append(self._pending.popleft())
        return batch

    def _again(self, items: Iterable[_Pending]) -> None:
        """Put items back at the head of the queue, in their order."""
        self._pending.extendleft(reversed(list(items)))
        self._arrived.set()

    async def _send(self, batch: list[_Pending]) -> None:
        for item in batch:
            item.tried = True
        brief = self._brief
        try:
            answers = await self._client.report_many(
                [item.report for item in batch], with_tasks=not brief
            )
        except (JobnikTransportError, ApiError) as exc:
            if brief and isinstance(exc, JobnikValidationError) and _BRIEF in exc.message:
                # Refused whole, so nothing was settled: sent again as that manager takes
                # it (so is a second batch that was out, brief, at the same time).
                if self._brief:
                    self._brief = False
                    self._log.info("the manager answers reports with their tasks (%s)", exc.message)
                self._again(batch)
                return
            if isinstance(exc, ApiError) and exc.status_code < 500:
                self._refused_batch(batch, exc)
            else:
                await self._retry(batch, exc)
            return
        self._failures = 0
        by_task = {answer.task_id: answer for answer in answers}
        for item in batch:
            answer = by_task.get(item.task.id)
            if answer is None:
                self._log.error(
                    "the manager's answer left out %s; its report is given up",
                    item.ids.name,
                    extra=item.ids.extra,
                )
                item.finish()
            elif answer.error is None:
                item.finish()
            else:
                self._refused(item, answer.error.code, answer.error.message)

    def _refused_batch(self, batch: list[_Pending], exc: ApiError) -> None:
        if len(batch) == 1:
            self._refused(batch[0], exc.code, exc.message)
            return
        self._log.warning(
            "the manager refused a batch of %d reports (%s); sending them one at a time",
            len(batch),
            exc,
        )
        for item in batch:
            item.alone = True
        self._again(batch)

    def _refused(self, item: _Pending, code: str, message: str) -> None:
        task, status = item.task, item.outcome.status
        name, extra = item.ids.name, item.ids.extra
        if code == "LEASE_LOST":
            self._log.warning(
                "%s: lease lost before it could be reported %s: %s",
                name,
                status,
                message,
                extra=extra,
            )
            # A lease lost is counted whichever call hears of it first: a heartbeat, or
            # the report of a handler that ended before the next heartbeat.
            if self._meter is not None:
                self._meter.lease_lost(self._meter.stage_type(item.ids.stage_type))
        elif code.startswith("ILLEGAL_") or code.endswith("NOT_FOUND"):
            # Its job was aborted or deleted meanwhile, or an earlier try of this very
            # report got through before its answer was lost.
            self._log.warning(
                "%s could not be reported %s: %s: %s", name, status, code, message, extra=extra
            )
        elif code == "VALIDATION_ERROR" and item.outcome.result is not None:
            # The manager refused the result (too large, say): the attempt cannot
            # succeed as it stands, so say so rather than leave the task to expire.
            reason = f"the manager refused the handler's result: {message}"
            outcome = bad_result(task, reason, self._log, item.ids)
            again = _Pending(task, outcome, item.deadline, item.queued_at, item.done, item.ids)
            again.tried = True
            self._again([again])
            return
        elif code == "VALIDATION_ERROR":
            self._log.error("%s: report refused: %s", name, message, extra=extra)
        else:
            self._log.error(
                "giving up reporting %s %s: %s: %s", name, status, code, message, extra=extra
            )
        item.finish()

    async def _retry(self, batch: list[_Pending], exc: JobnikTransportError | ApiError) -> None:
        self._failures += 1
        now = self._clock.monotonic()
        kept: list[_Pending] = []
        for item in batch:
            if now >= item.deadline:
                self._log.error(
                    "giving up reporting %s %s: %s",
                    item.ids.name,
                    item.outcome.status,
                    exc,
                    extra=item.ids.extra,
                )
                item.finish()
            else:
                kept.append(item)
        if kept:
            self._log.warning("reporting %d task(s) failed: %s; retrying", len(kept), exc)
            self._again(kept)
        await self._clock.sleep(self._backoff.delay(self._failures).total_seconds())
