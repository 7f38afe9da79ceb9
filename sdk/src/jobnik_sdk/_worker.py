"""Worker: claims tasks of some stage types, runs a handler on each, reports the outcome."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Sequence
from contextlib import suppress
from datetime import timedelta
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ._attempt import Attempt, Outcome
from ._backoff import Backoff
from ._claims import Claimer
from ._client import ConsumerClient, JobnikClient
from ._clock import SYSTEM_CLOCK, Clock, wait_any, wait_event
from ._context_cache import ContextCache
from ._exceptions import ApiError, JobnikTransportError, RetryLaterError
from ._handler import Handler, data_binder
from ._health import keep_fresh
from ._leases import LeaseKeeper
from ._logs import WorkerLog
from ._metrics import Meter, serve, worker_metrics
from ._models import Task, TaskStatus
from ._prefetch import Prefetch
from ._reporter import MAX_REPORTS, Reporter
from ._schedule import Schedule, Step
from ._settings import DEFAULT_POLL_BACKOFF, MAX_PREFETCH, check_worker_options_in
from ._signals import listen_for_stop
from ._tracing import HandlerSpans
from ._wakeup import Wakeups

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

DataT = TypeVar("DataT")

# How long a stopping worker still waits for a claim that is waiting for work: long
# enough for an answer already on its way to arrive, as its tasks would be stranded.
ABANDON_AFTER = timedelta(milliseconds=500)
NOT_STARTED_REASON = "handed back: the worker stopped before starting it"
CONTEXT_UNREAD_REASON = "handed back: its job and stage could not be read"


def default_worker_name() -> str:
    """`<hostname>-<pid>`: tells the worker apart on tasks and in the event history."""
    return f"{socket.gethostname()}-{os.getpid()}"[-100:]


class Worker(Generic[DataT]):
    """Runs `handler` on tasks of `stage_types`, up to `concurrency` at a time.

    `await worker.run()` claims and runs tasks until `await worker.shutdown()`, or
    SIGTERM/SIGINT when run in the main thread (`handle_signals=False` leaves signals
    alone): one signal stops every Worker running in the process, a second one stops
    them without waiting, and the signal handlers from before are back once the last
    has returned. `async with Worker(...)` runs it in the background for the block's
    length.

    Claims: one batch claim (`claim`) asks for as many tasks as there are free slots,
    of all the worker's stage types at once (in groups of 20, taken in turn), so the
    manager's order holds across them: highest job priority, then oldest. After a claim
    that brought tasks it claims again at once. Once a claim finds nothing, the next is
    a long poll: the manager holds it for up to `claim_wait` (30 s; `timedelta(0)`
    turns this off) and answers as soon as tasks of the worker's types are ready, so
    the worker starts them within milliseconds without RabbitMQ. Claims are still paced
    by `poll_backoff`'s growing, jittered delays, which a long poll spends waiting: only
    one that comes back empty early is followed by a pause. Long polls need the stage
    types to fit in one claim (20), and a manager that takes `waitSeconds`; against an
    older one the worker polls with `poll_backoff`.

    Leases: each claim takes a `lease`. One heartbeat loop renews the leases of all the
    running tasks in one batch call every `heartbeat_interval` (and sooner, within a
    second, to carry some handler's `ctx.update_progress`). When it answers that a task
    was aborted, or that its lease was lost (it ran out, say, while the worker could not
    reach the manager), that handler is cancelled (`asyncio.CancelledError` inside it)
    and the task is dropped without a report. `name` goes with each claim, onto the task
    and its events.

    Context: the handler's `ctx.job` and `ctx.stage` are read once per job and stage
    and kept for a few seconds, shared by the tasks that start meanwhile; read them
    again through the client when a handler needs them fresh.

    Reports, each under the task's lease: a handler that returns reports the task
    COMPLETED, with its returned dict (or pydantic model) as the task's `result`; one
    that raises reports it FAILED with `"<ExceptionType>: <message>"` as the reason, and
    the manager decides whether it is tried again; NonRetryableError (and data that
    does not validate) fails it at once, with the error's message as the reason;
    RetryLaterError hands it back for `delay` without spending an attempt. Reports go
    in batches (`report_many`) of up to `report_batch_size` (100), up to two batches
    at a time, each sent when it is full, when no task is left running or waiting to
    start whose report could join it, or when its oldest report has waited
    `report_linger` (5 ms). A handler's slot is
    free for the next task as soon as the handler ends, while its report is on its way,
    so claims and reports overlap; at most `concurrency` reports wait for the manager's
    answer at a time (past that, slots free only as answers come back), and the worker
    counts a task done, and stops for good, only once its report is answered. A batch
    that cannot get through is sent again for up to `report_timeout`; a report that
    cannot be sent is never turned into a failed attempt.

    Wake-ups: given `amqp_url` (needs the `amqp` extra), the worker listens on a
    durable queue per stage type, `jobnik.tasks.<stageType>`, bound to the exchange
    `jobnik` with key `task.ready.<stageType>`. A message only wakes it: it is acked at
    once and the worker claims until nothing is left. While the broker is reachable an
    idle worker does not long-poll: it claims again only when woken, or every
    `safety_poll` in case a message was lost; while it is not, it claims as without one.

    Metrics (the `metrics` extra, prometheus-client): off by default. `metrics=True`
    records them in prometheus_client's default registry, for an app that serves it
    itself; `metrics_port` also serves that registry on the port (`/metrics`) while the
    worker runs. Workers of one process share the metrics (and a port). Names and
    labels: sdk/README.md, "Observability".

    Health: given `health_file`, the worker touches that file every 5 seconds while it
    runs and removes it when it stops; `python -m jobnik_sdk.health FILE` is a container
    health check that reads it (stale after 30 s: the event loop is stuck).

    Tracing (OpenTelemetry): each handler runs in a span `jobnik.task <stage type>`
    (CONSUMER), a child of the trace context stored on its task (the producer's, when
    it created the job under a span), from `tracer_provider` or the global one; with no
    OpenTelemetry SDK configured it records nothing.

    On shutdown the worker stops claiming (a long poll that is still waiting half a
    second later is abandoned) and waits up to `shutdown_grace` for running tasks
    (heartbeating them meanwhile); handlers still running then are cancelled and their
    tasks handed back (RETRIED at once, no attempt spent), as are tasks claimed ahead
    that never started, so no claimed task waits for its lease to run out and a rolling
    restart costs no task an attempt. Reports waiting for their batch are sent at once.

    Time: everything the worker measures or waits out (leases, heartbeats, reports,
    idle polls, the shutdown grace) is on `clock`, the real time unless a test hands in
    one of its own (a `monotonic()` and an async `sleep(seconds)`) to move on itself.

    Authentication: given a URL, the worker's client sends `token` (by default the
    `JOBNIK_TOKEN` environment variable) as a bearer token. When the manager refuses a
    claim for the token (401, or 403 for a role or stage types that may not claim), the
    worker logs it as an ERROR, stops as on shutdown, and `run()` raises
    AuthenticationError or PermissionDeniedError.
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
        lease: timedelta = timedelta(seconds=30),
        heartbeat_interval: timedelta = timedelta(seconds=10),
        name: str | None = None,
        amqp_url: str | None = None,
        safety_poll: timedelta = timedelta(seconds=30),
        handle_signals: bool = True,
        logger: logging.Logger | None = None,
        claim_wait: timedelta = timedelta(seconds=30),
        report_batch_size: int = MAX_REPORTS,
        report_linger: timedelta = timedelta(milliseconds=5),
        prefetch: int = MAX_PREFETCH,
        metrics: bool = False,
        metrics_port: int | None = None,
        health_file: str | os.PathLike[str] | None = None,
        tracer_provider: TracerProvider | None = None,
        token: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        types = [stage_types] if isinstance(stage_types, str) else list(stage_types)
        if not types or any(not t for t in types):
            raise ValueError("a worker needs at least one non-empty stage type")
        # Every argument by name, as WorkerSettings checks its own: one set of rules.
        check_worker_options_in(locals())
        name = default_worker_name() if name is None else name
        if token is not None and not isinstance(client, str):
            raise ValueError("token goes with a manager URL; give it to your client instead")
        self._owns_client = isinstance(client, str)
        self._client: ConsumerClient = (
            JobnikClient(client, token=token) if isinstance(client, str) else client
        )
        self._stage_types = types
        self._lease = lease
        self._name = name
        self._handler = handler
        self._bind = data_binder(handler, data_model)
        self._concurrency = concurrency
        self._poll_backoff = poll_backoff
        self._grace = shutdown_grace
        self._handle_signals = handle_signals
        self._safety_poll = safety_poll
        self._clock = clock or SYSTEM_CLOCK
        # Made (and prometheus_client imported) here, so a missing extra fails at once.
        on = metrics or metrics_port is not None
        self._meter = Meter(worker_metrics() if on else None, types)
        self._metrics_port = metrics_port
        self._health_file = Path(health_file) if health_file is not None else None
        self._spans = HandlerSpans(tracer_provider)
        self._log = WorkerLog(logger or logging.getLogger("jobnik_sdk.worker"), types, name)
        self._wakeups = (
            Wakeups(
                amqp_url,
                types,
                logger=WorkerLog(logger or logging.getLogger("jobnik_sdk.wakeup"), types, name),
                clock=self._clock,
            )
            if amqp_url
            else None
        )
        self._contexts = ContextCache(self._client, clock=self._clock)
        self._claimer = Claimer(
            self._client,
            types,
            lease=lease,
            name=name,
            wait=claim_wait,
            log=self._log,
            on_context=self._contexts.put,
        )
        self._leases = LeaseKeeper(
            self._client,
            lease=lease,
            interval=heartbeat_interval,
            log=self._log,
            meter=self._meter,
            clock=self._clock,
        )
        self._reporter = Reporter(
            self._client,
            batch_size=report_batch_size,
            linger=report_linger,
            timeout=report_timeout,
            backoff=poll_backoff,
            running=lambda: len(self._handlers) + len(self._schedule.ready),
            log=self._log,
            meter=self._meter,
            clock=self._clock,
        )

        # Claimed tasks waiting for a slot (their leases kept meanwhile), the slots taken,
        # claims on their way, and the stop. Reports awaiting the manager's answer are
        # bounded, so a slow manager slows claims: two full batches' worth, so one can
        # fill while the other is on its way.
        self._schedule: Schedule[Attempt] = Schedule(
            concurrency,
            Prefetch(concurrency, prefetch),
            max_unanswered=concurrency + 2 * report_batch_size,
        )
        # Raised when room for a claim may have come: a slot, an answer, a claim back.
        self._room = asyncio.Event()
        self._stopping = asyncio.Event()
        self._finished = asyncio.Event()
        self._started = False
        # Handlers running and reports awaiting answers.
        self._runners: set[asyncio.Future[Any]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self._background: asyncio.Task[None] | None = None

    @property
    def stage_types(self) -> list[str]:
        """The stage types this worker claims."""
        return list(self._stage_types)

    @property
    def name(self) -> str:
        """The name this worker claims under."""
        return self._name

    @property
    def in_flight(self) -> int:
        """How many claimed tasks are running or being reported right now."""
        return len(self._runners)

    @property
    def long_polls(self) -> bool:
        """Whether an idle worker's claims wait at the manager for work: `claim_wait` is
        above zero, the stage types fit in one claim, and the manager has not refused."""
        return self._claimer.long_polls

    @property
    def amqp_url(self) -> str | None:
        """The RabbitMQ the worker listens on for wake-ups, if any."""
        return self._wakeups.amqp_url if self._wakeups else None

    @property
    def metrics_port(self) -> int | None:
        """The port the worker serves its Prometheus metrics on while it runs, if any."""
        return self._metrics_port

    @property
    def safety_poll(self) -> timedelta:
        """How often a worker that hears wake-ups claims anyway, in case one was lost."""
        return self._safety_poll

    # ---- lifecycle ----------------------------------------------------------------------

    async def run(self) -> None:
        """Claim and run tasks until shutdown; returns once every claimed task is reported."""
        if self._started:
            raise RuntimeError("a Worker runs once; create another one")
        self._started = True
        stop_serving = serve(self._metrics_port) if self._metrics_port is not None else None
        # Shared with the process's other Workers, so that one signal stops them all.
        stop_listening = listen_for_stop(self._on_signal) if self._handle_signals else None
        self._log.info(
            "worker %s started: stage types %s, concurrency %d, lease %s",
            self._name,
            self._stage_types,
            self._concurrency,
            self._lease,
        )
        listener = (
            asyncio.create_task(self._wakeups.run(), name="jobnik-worker-wakeups")
            if self._wakeups
            else None
        )
        # They serve the running tasks until the last is reported, so they stop last.
        services = [
            asyncio.create_task(self._leases.run(), name="jobnik-worker-heartbeats"),
            asyncio.create_task(self._reporter.run(), name="jobnik-worker-reports"),
        ]
        if self._health_file is not None:
            services.append(
                asyncio.create_task(keep_fresh(self._health_file), name="jobnik-worker-health")
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
            if listener is not None:
                services.append(listener)
            for service in services:
                service.cancel()
                with suppress(asyncio.CancelledError):
                    await service
            self._contexts.close()
            if stop_listening is not None:
                stop_listening()
            if stop_serving is not None:
                stop_serving()
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
        if self._schedule.stop(self._clock.monotonic()):
            self._stopping.set()
            self._reporter.hurry()
            self._start_ready()  # hands back what is claimed but not started

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._schedule.stopping:
            # A second signal: stop now. Running handlers are cancelled and their tasks
            # handed back, as at the end of the grace period.
            self._log.warning("%s received again; stopping without waiting", sig.name)
            self._cancel_handlers("on a second signal")
            return
        self._log.info(
            "%s received; finishing %d running task(s) (grace %s)",
            sig.name,
            self.in_flight,
            self._grace,
        )
        self._request_stop()

    async def _drain(self) -> None:
        remaining = self._schedule.grace_left(self._grace.total_seconds(), self._clock.monotonic())
        if not await self._wait_runners(remaining):
            self._cancel_handlers(f"still running after the {self._grace} grace period")
            await self._wait_runners(None)

    async def _wait_runners(self, limit: float | None) -> bool:
        """Wait for running tasks to be reported; False if some still run after `limit`.

        A handler that ends hands over to its report, so wait until none of either is left."""
        deadline = None if limit is None else self._clock.monotonic() + limit
        while self._runners:
            left = None if deadline is None else deadline - self._clock.monotonic()
            if left is not None and left <= 0:
                return False
            await wait_any(set(self._runners), left, self._clock)
        return True

    def _cancel_handlers(self, why: str) -> None:
        if self._handlers:
            self._log.warning(
                "cancelling %d task(s) %s; they are handed back", len(self._handlers), why
            )
        for invocation in self._handlers:
            invocation.cancel()

    # ---- claiming -----------------------------------------------------------------------

    async def _poll(self) -> None:
        schedule = self._schedule
        # While work flows, claims go out without waiting for the one before to come back.
        claims: set[asyncio.Task[list[Task]]] = set()
        try:
            while not schedule.stopping:
                self._room.clear()
                for done in [claim for claim in claims if claim.done()]:
                    claims.discard(done)
                    tasks = done.result()  # an unexpected error ends the loop, as inline
                    schedule.answered(found_any=bool(tasks))
                    self._take_claimed(tasks)
                step, limit = schedule.next_step(len(self._runners), len(claims))
                if step is Step.WAIT:
                    await self._until_room()
                elif step is Step.CLAIM_AHEAD:
                    schedule.claim_sent(limit)
                    claim = asyncio.create_task(self._claim(limit))
                    claim.add_done_callback(partial(self._claim_back, limit))
                    claims.add(claim)
                else:
                    await self._claim_inline(limit)
        finally:
            # Never cancelled: what they claim is handed back, not stranded.
            if claims:
                await asyncio.wait(claims)
            for claim in claims:
                if not claim.cancelled() and claim.exception() is None:
                    self._take_claimed(claim.result())

    async def _claim_inline(self, limit: int) -> None:
        """Claim and wait for the answer (a long poll once idle)."""
        if self._wakeups:
            # Cleared before claiming: a wake-up that lands during the claim is kept.
            self._wakeups.event.clear()
        # With the broker there, wake-ups say when to claim; without it, the manager
        # does, through a claim that waits, sent once a plain one found nothing.
        may_wait = self._claimer.long_polls and not (
            self._wakeups is not None and self._wakeups.connected
        )
        long_poll = may_wait and self._schedule.idle_steps > 0
        began = self._clock.monotonic()
        tasks = await (self._long_poll(limit) if long_poll else self._claim(limit))
        self._schedule.answered(found_any=bool(tasks))
        held_back = self._claimer.held_back
        if not tasks and held_back is not None:
            # A stage type's limit held work back: it may let more out then, and no
            # wake-up will say so.
            await self._sleep(held_back)
            return
        if not tasks:
            if long_poll or not may_wait:
                await self._idle(self._schedule.idle_steps, waited=self._clock.monotonic() - began)
            return
        self._take_claimed(tasks)

    async def _claim(self, limit: int, *, wait: bool = False) -> list[Task]:
        tasks = await self._claimer.claim(limit, wait=wait)
        if not tasks:
            self._meter.empty_poll()
        return tasks

    def _claim_back(self, limit: int, _claim: asyncio.Task[list[Task]]) -> None:
        self._schedule.claim_back(limit)
        self._room.set()

    def _take_claimed(self, tasks: list[Task]) -> None:
        for task in tasks:
            attempt = Attempt(
                task,
                log=self._log,
                on_progress=self._leases.progress_recorded,
                stage=self._contexts.known_stage(task.stage_id),  # from the claim, if it said
                worker=self._name,
            )
            if self._meter.enabled:
                self._meter.claimed(self._meter.stage_type(attempt.ids.stage_type))
            self._leases.add(attempt)
            self._schedule.claimed([attempt])
        self._start_ready()

    async def _until_room(self) -> None:
        stop = asyncio.ensure_future(self._stopping.wait())
        room = asyncio.ensure_future(self._room.wait())
        try:
            await asyncio.wait({stop, room}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            room.cancel()

    async def _long_poll(self, limit: int) -> list[Task]:
        """A claim that waits for work; abandoned if the worker stops meanwhile and it
        does not come back within `ABANDON_AFTER`.

        A stopping worker cannot wait out a long poll. Its connection is closed, so the
        manager claims nothing more for it; only tasks it claimed in the very moment the
        worker gave up would be stranded until their leases ran out. A claim that does
        not wait is never abandoned (see `run`).
        """
        claim = asyncio.create_task(self._claim(limit, wait=True))
        stop = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({claim, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not claim.done():
                await wait_any({claim}, ABANDON_AFTER.total_seconds(), self._clock)
        finally:
            stop.cancel()
            if not claim.done():
                self._log.info("stopping: a claim still waiting for work is abandoned")
                claim.cancel()
                await asyncio.wait({claim})
        return [] if claim.cancelled() else claim.result()

    async def _idle(self, idle_steps: int, *, waited: float) -> None:
        """Nothing came of the claim, which took `waited` seconds: wait for a wake-up (or
        the slow safety poll) while the broker is there, else for what remains of the
        poll backoff's delay."""
        if self._wakeups is None or not self._wakeups.connected:
            delay = self._poll_backoff.delay(idle_steps) - timedelta(seconds=waited)
            if delay > timedelta(0):
                await self._sleep(delay)
            return
        stop = asyncio.create_task(self._stopping.wait())
        woken = asyncio.create_task(self._wakeups.event.wait())
        try:
            await wait_any({stop, woken}, self._safety_poll.total_seconds(), self._clock)
        finally:
            stop.cancel()
            woken.cancel()

    async def _sleep(self, delay: timedelta) -> None:
        await wait_event(self._stopping, delay.total_seconds(), self._clock)

    # ---- running ------------------------------------------------------------------------

    def _start_ready(self) -> None:
        """Start claimed tasks while slots are free; once stopping, hand them back."""
        schedule = self._schedule
        while (attempt := schedule.next_ready()) is not None:
            self._room.set()
            if attempt.dropped is not None:
                self._leases.remove(attempt)  # aborted or lost while it waited
                continue
            if schedule.stopping:
                self._leases.remove(attempt)
                outcome = Outcome(TaskStatus.RETRIED, reason=NOT_STARTED_REASON, delay=timedelta(0))
                self._track(self._reporter.submit(attempt.task, outcome, ids=attempt.ids))
                continue
            schedule.started()
            task = attempt.task
            # One asyncio task per claimed task: its ending is taken up by a callback.
            invocation = asyncio.create_task(
                self._invoke(task, attempt), name=f"jobnik-handler-{task.id}"
            )
            attempt.handler = invocation
            self._handlers.add(invocation)
            self._runners.add(invocation)  # and taken out by _handler_done
            # The gauge's label as known now: the stage type may only be read later.
            started_as = ""
            if self._meter.enabled:
                started_as = self._meter.stage_type(attempt.ids.stage_type)
                self._meter.started(started_as)
            invocation.add_done_callback(
                partial(self._handler_done, attempt, self._clock.monotonic(), started_as)
            )

    def _track(self, work: asyncio.Future[Any]) -> None:
        """Count `work` (a handler, or a report awaiting its answer) as in flight."""
        self._runners.add(work)
        work.add_done_callback(self._untrack)

    def _untrack(self, work: asyncio.Future[Any]) -> None:
        self._runners.discard(work)
        self._room.set()  # a report answered may let claims go on

    def _handler_done(
        self, attempt: Attempt, began: float, started_as: str, invocation: asyncio.Task[Any]
    ) -> None:
        """The handler ended: report its outcome (unless the task was dropped) and free
        its slot for the next task while the report is on its way."""
        self._untrack(invocation)
        self._handlers.discard(invocation)
        self._leases.remove(attempt)
        took = self._clock.monotonic() - began
        if not invocation.cancelled():
            invocation.exception()  # read even when dropped, so asyncio does not warn
        outcome = None
        try:
            if attempt.dropped is None:
                outcome = attempt.outcome(shutting_down=self._schedule.stopping)
                self._track(self._reporter.submit(attempt.task, outcome, ids=attempt.ids))
        except Exception:
            self._log.exception(
                "unexpected error while reporting %s", attempt.name, extra=attempt.extra
            )
        finally:
            self._schedule.ended(took)
            if self._meter.enabled:  # whatever happened above, or the gauge would drift
                ended, error_type = attempt.ending(outcome)
                stage_type = self._meter.stage_type(attempt.ids.stage_type)
                self._meter.ended(started_as, stage_type, ended, took, error_type)
            self._start_ready()

    async def _invoke(self, task: Task, attempt: Attempt) -> Any:
        contexts = self._contexts
        try:
            # Kept from the claim's answer, mostly: no awaiting then.
            stage = contexts.known_stage(task.stage_id) or await contexts.stage(task.stage_id)
            job = contexts.known_job(stage.job_id) or await contexts.job(stage.job_id)
        except (JobnikTransportError, ApiError) as exc:
            # The worker's own plumbing failed before the handler ran: the task goes back
            # at once, to be offered again, without spending an attempt.
            raise RetryLaterError(timedelta(0), f"{CONTEXT_UNREAD_REASON}: {exc}") from exc
        ctx = attempt.context(job, stage, self._client)
        with self._spans.span(task, job_id=stage.job_id, stage_type=stage.type):
            return await attempt.run(self._handler, self._bind, ctx)
