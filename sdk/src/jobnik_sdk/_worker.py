"""Worker: claims tasks of some stage types, runs a handler on each, reports the outcome."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from datetime import timedelta
from types import TracebackType
from typing import Any, Generic, TypeVar

from ._backoff import Backoff
from ._client import JobnikClient
from ._consumer import ConsumerClient
from ._context import TaskContext
from ._exceptions import (
    ApiError,
    IllegalTransitionError,
    NonRetryableError,
    NotFoundError,
    TransportError,
)
from ._handler import Handler, data_binder
from ._models import EntityId, Task

DataT = TypeVar("DataT")

DEFAULT_POLL_BACKOFF = Backoff(
    initial=timedelta(milliseconds=250), maximum=timedelta(seconds=5), jitter=0.3
)


class Worker(Generic[DataT]):
    """Runs `handler` on tasks of `stage_types`, up to `concurrency` at a time.

    `await worker.run()` claims and runs tasks until `await worker.shutdown()`, or
    SIGTERM/SIGINT when run in the main thread (`handle_signals=False` leaves signals
    alone). `async with Worker(...)` runs it in the background for the block's length.

    A handler that returns reports the task COMPLETED; one that raises reports it
    FAILED and the manager decides whether it is tried again. NonRetryableError (and
    data that does not validate) is reported FAILED too: the manager cannot yet be told
    to fail at once, so give such tasks `maxAttempts` 1 until it can.

    When a queue is empty the worker polls again after `poll_backoff`'s growing,
    jittered delays; after a claim it claims again at once. On shutdown it stops
    claiming and waits up to `shutdown_grace` for running tasks; handlers still running
    then are cancelled and their tasks reported FAILED, so no claimed task is left
    IN_PROGRESS. A report that cannot get through is retried for up to `report_timeout`.
    """

    def __init__(
        self,
        client: ConsumerClient | str,
        *,
        stage_types: str | Sequence[str],
        handler: Handler[DataT],
        data_model: type[DataT] | None = None,
        concurrency: int = 1,
        poll_backoff: Backoff = DEFAULT_POLL_BACKOFF,
        shutdown_grace: timedelta = timedelta(seconds=30),
        report_timeout: timedelta = timedelta(minutes=5),
        handle_signals: bool = True,
        logger: logging.Logger | None = None,
    ) -> None:
        types = [stage_types] if isinstance(stage_types, str) else list(stage_types)
        if not types or any(not t for t in types):
            raise ValueError("a worker needs at least one non-empty stage type")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if shutdown_grace < timedelta(0):
            raise ValueError("shutdown_grace cannot be negative")
        self._owns_client = isinstance(client, str)
        self._client: ConsumerClient = JobnikClient(client) if isinstance(client, str) else client
        self._stage_types = types
        self._handler = handler
        self._bind = data_binder(handler, data_model)
        self._concurrency = concurrency
        self._poll_backoff = poll_backoff
        self._grace = shutdown_grace
        self._report_timeout = report_timeout
        self._handle_signals = handle_signals
        self._log = logger or logging.getLogger("jobnik_sdk.worker")

        self._slots = asyncio.Semaphore(concurrency)
        self._stopping = asyncio.Event()
        self._finished = asyncio.Event()
        self._stop_requested_at: float | None = None
        self._started = False
        self._runners: set[asyncio.Task[None]] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._next_type = 0
        self._background: asyncio.Task[None] | None = None

    @property
    def stage_types(self) -> list[str]:
        """The stage types this worker claims."""
        return list(self._stage_types)

    @property
    def in_flight(self) -> int:
        """How many claimed tasks are running or being reported right now."""
        return len(self._runners)

    # ---- lifecycle ----------------------------------------------------------------------

    async def run(self) -> None:
        """Claim and run tasks until shutdown; returns once every claimed task is reported."""
        if self._started:
            raise RuntimeError("a Worker runs once; create another one")
        self._started = True
        remove_signal_handlers = self._install_signal_handlers()
        self._log.info(
            "worker started: stage types %s, concurrency %d", self._stage_types, self._concurrency
        )
        poller = asyncio.create_task(self._poll(), name="jobnik-worker-poll")
        try:
            try:
                # Shielded: cancelling a claim in flight could strand the task it claims.
                await asyncio.shield(poller)
            except asyncio.CancelledError:
                self._request_stop()
                await poller
                self._cancel_handlers("the worker was cancelled")
                await self._wait_runners(None)
                raise
            except BaseException:
                self._request_stop()
                await self._drain()
                raise
            await self._drain()
        finally:
            remove_signal_handlers()
            if self._owns_client:
                await self._client.aclose()
            self._finished.set()
            self._log.info("worker stopped")

    async def shutdown(self) -> None:
        """Stop claiming, let running tasks finish within the grace period, and return
        once `run()` has returned. Safe to call more than once, or before `run()`.

        Do not await it from a handler: it waits for that handler to finish.
        """
        self._request_stop()
        if self._started:
            await self._finished.wait()

    async def __aenter__(self) -> Worker[DataT]:
        self._background = asyncio.create_task(self.run(), name="jobnik-worker")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()
        if self._background is not None:
            await self._background

    def _request_stop(self) -> None:
        if not self._stopping.is_set():
            self._stop_requested_at = time.monotonic()
            self._stopping.set()

    def _install_signal_handlers(self) -> Callable[[], None]:
        if not self._handle_signals or threading.current_thread() is not threading.main_thread():
            return lambda: None
        loop = asyncio.get_running_loop()
        previous: dict[signal.Signals, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            handler = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                continue  # e.g. Windows event loops have no signal handlers
            previous[sig] = handler

        def remove() -> None:
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                # Give SIGINT back to asyncio.run's handler (or whoever had it), not
                # to the default that remove_signal_handler leaves.
                if handler is not None:
                    signal.signal(sig, handler)

        return remove

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._stopping.is_set():
            self._log.info("%s received; already shutting down", sig.name)
            return
        self._log.info(
            "%s received; finishing %d running task(s) (grace %s)",
            sig.name,
            self.in_flight,
            self._grace,
        )
        self._request_stop()

    async def _drain(self) -> None:
        started = self._stop_requested_at or time.monotonic()
        remaining = max(0.0, started + self._grace.total_seconds() - time.monotonic())
        if not await self._wait_runners(remaining):
            self._cancel_handlers(f"still running after the {self._grace} grace period")
            await self._wait_runners(None)

    async def _wait_runners(self, limit: float | None) -> bool:
        """Wait for running tasks to be reported; False if some still run after `limit`."""
        if not self._runners:
            return True
        _, pending = await asyncio.wait(set(self._runners), timeout=limit)
        return not pending

    def _cancel_handlers(self, why: str) -> None:
        if self._handlers:
            self._log.warning(
                "cancelling %d task(s) %s; they are reported FAILED", len(self._handlers), why
            )
        for invocation in self._handlers:
            invocation.cancel()

    # ---- claiming -----------------------------------------------------------------------

    async def _poll(self) -> None:
        idle_steps = 0
        while not self._stopping.is_set():
            if not await self._acquire_slot():
                return
            try:
                task = await self._claim()
            except BaseException:
                self._slots.release()
                raise
            if task is None:
                self._slots.release()
                idle_steps += 1
                await self._sleep(self._poll_backoff.delay(idle_steps))
                continue
            idle_steps = 0
            runner = asyncio.create_task(self._run_task(task), name=f"jobnik-task-{task.id}")
            self._runners.add(runner)
            runner.add_done_callback(self._runners.discard)

    async def _acquire_slot(self) -> bool:
        """Wait for a free slot, or for shutdown (False)."""
        acquire = asyncio.ensure_future(self._slots.acquire())
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not acquire.done():
            acquire.cancel()
        got: bool
        try:
            got = await acquire
        except asyncio.CancelledError:
            got = False
        if got and self._stopping.is_set():
            self._slots.release()
            return False
        return got

    async def _claim(self) -> Task | None:
        """One claim attempt per stage type, starting after the type served last."""
        count = len(self._stage_types)
        for offset in range(count):
            index = (self._next_type + offset) % count
            stage_type = self._stage_types[index]
            try:
                task = await self._client.dequeue(stage_type)
            except (TransportError, ApiError) as exc:
                self._log.warning("claiming a %r task failed: %s", stage_type, exc)
                continue
            if task is not None:
                self._next_type = (index + 1) % count
                return task
        return None

    async def _sleep(self, delay: timedelta) -> None:
        with suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), delay.total_seconds())

    # ---- running ------------------------------------------------------------------------

    async def _run_task(self, task: Task) -> None:
        try:
            invocation = asyncio.create_task(self._invoke(task), name=f"jobnik-handler-{task.id}")
            self._handlers.add(invocation)
            try:
                await asyncio.wait({invocation})
            finally:
                self._handlers.discard(invocation)
            await self._report(task, self._succeeded(task, invocation))
        except Exception:
            self._log.exception("unexpected error while running task %s", task.id)
        finally:
            self._slots.release()

    async def _invoke(self, task: Task) -> None:
        stage = await self._client.get_stage(task.stage_id)
        job = await self._client.get_job(stage.job_id)
        ctx = TaskContext(task=task, job=job, stage=stage, client=self._client)
        data = self._bind(task)
        ctx.logger.info("started (attempt %d of %d)", ctx.attempt, task.max_attempts)
        began = time.monotonic()
        await self._handler(data, ctx)
        ctx.logger.info("done in %.2fs", time.monotonic() - began)

    def _succeeded(self, task: Task, invocation: asyncio.Task[None]) -> bool:
        if invocation.cancelled():
            return False
        exc = invocation.exception()
        if exc is None:
            return True
        where = f"task {task.id} (attempt {task.attempts + 1} of {task.max_attempts})"
        if isinstance(exc, NonRetryableError):
            self._log.error("%s failed and must not be retried: %s", where, exc)
        else:
            self._log.error("%s failed", where, exc_info=exc)
        return False

    async def _report(self, task: Task, succeeded: bool) -> None:
        report: Callable[[EntityId], Awaitable[Task]] = (
            self._client.complete if succeeded else self._client.fail
        )
        outcome = "COMPLETED" if succeeded else "FAILED"
        deadline = time.monotonic() + self._report_timeout.total_seconds()
        step = 0
        while True:
            try:
                await report(task.id)
                return
            except (IllegalTransitionError, NotFoundError) as exc:
                # Its job was aborted or deleted meanwhile, or an earlier try of this
                # very report got through before its answer was lost.
                self._log.warning("task %s could not be reported %s: %s", task.id, outcome, exc)
                return
            except (TransportError, ApiError) as exc:
                final = isinstance(exc, ApiError) and exc.status_code < 500
                step += 1
                if final or time.monotonic() >= deadline:
                    self._log.error("giving up reporting task %s %s: %s", task.id, outcome, exc)
                    return
                self._log.warning(
                    "reporting task %s %s failed: %s; retrying", task.id, outcome, exc
                )
                await asyncio.sleep(self._poll_backoff.delay(step).total_seconds())
