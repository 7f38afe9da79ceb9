"""`run_attempt`: a handler run as a Worker runs one attempt, on a FakeManager: what
the Worker would report, the progress the handler recorded, the heartbeats that carried
it and what the manager answered, and a cancellation (the job aborted, the lease lost,
a time limit) at a moment the test chooses.

It drives the Worker's own parts: the `Attempt` that builds the handler's context, runs
it and maps its ending to a report, and the `LeaseKeeper` that heartbeats the task and
cancels the handler on the manager's answer. The manager is the real one, in-process
(`FakeManager`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .._attempt import Attempt, Outcome, Progress
from .._context import TaskContext
from .._handler import Handler, data_binder
from .._leases import LeaseKeeper
from .._logs import WorkerLog
from .._models import Event
from .._reports import HeartbeatOutcome, TaskHeartbeat
from ._builders import make_context
from ._fake import FakeJobnik, FakeManager

# Long enough that no heartbeat in a test is late for it.
_LEASE = timedelta(seconds=30)
_ANSWER = timedelta(seconds=10)
_CANCELLED = "the test cancelled it"


@dataclass(frozen=True, slots=True)
class SentHeartbeat:
    """One heartbeat the Worker sent for the task, and the manager's answer to it:
    `cancel_requested` (its job was aborted) or the `error` code (`LEASE_LOST`, ...)."""

    progress: int | None
    message: str | None
    cancel_requested: bool
    error: str | None


@dataclass
class AttemptRun:
    """How one attempt went.

    `outcome` is what the Worker would report (its own mapping of a return or an
    exception), None when the attempt was cancelled: a cancelled attempt is left
    unreported, and `cancelled` says why ("its job was aborted", "its lease was lost",
    "it ran past its time limit", "the test cancelled it"). `progress` lists each
    `ctx.update_progress` in order; `heartbeats`, the heartbeats sent meanwhile (which
    carry the latest progress not sent yet) with their answers; `events`, the entries
    the handler added to the job's history. `context` is the handler's `TaskContext`.
    """

    context: TaskContext
    outcome: Outcome | None = None
    cancelled: str | None = None
    progress: list[Progress] = field(default_factory=list)
    heartbeats: list[SentHeartbeat] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


class _Manager(FakeJobnik):
    """The attempt's client: the fake manager, with the test's interventions made on it
    just before the heartbeat they are set for, and every heartbeat kept."""

    def __init__(
        self, manager: FakeManager, *, abort_at: int | None, lose_lease_at: int | None
    ) -> None:
        super().__init__(manager)
        self.sent: list[SentHeartbeat] = []
        self.job_id: Any = None
        self.task_id: Any = None
        self._abort_at = abort_at
        self._lose_lease_at = lose_lease_at
        self._beats = 0  # sent, answered or not

    async def heartbeat_many(
        self, heartbeats: Sequence[TaskHeartbeat], *, lease: timedelta | None = None
    ) -> list[HeartbeatOutcome]:
        self._beats += 1
        # Shielded: a heartbeat the Worker gives up on (one slower than its interval)
        # must not stop the intervention halfway; a later heartbeat hears of it.
        if self._beats == self._abort_at:
            await asyncio.shield(self.abort(self.job_id))
        if self._beats == self._lose_lease_at:
            await asyncio.shield(self.lose_lease())
        answers = await super().heartbeat_many(heartbeats, lease=lease)
        for sent, answer in zip(heartbeats, answers, strict=True):
            error = answer.error.code if answer.error is not None else None
            self.sent.append(
                SentHeartbeat(sent.progress, sent.message, answer.cancel_requested, error)
            )
        return answers

    async def lose_lease(self) -> None:
        """Let the task's lease run out at the manager, as when the worker was out of
        reach for longer than the lease."""
        task = await self.get_task(self.task_id)
        if task.lease_expires_at is not None:
            self.clock.advance(max(timedelta(0), task.lease_expires_at - self.clock.now()))
        self.clock.advance(timedelta(seconds=1))


async def run_attempt(
    handler: Handler[Any],
    data: Mapping[str, Any] | None = None,
    *,
    data_model: Any = None,
    heartbeat_interval: timedelta = timedelta(milliseconds=100),
    abort_at_heartbeat: int | None = None,
    lose_lease_at_heartbeat: int | None = None,
    cancel_after: timedelta | None = None,
    cancel_at_progress: int | None = None,
    **context_options: Any,
) -> AttemptRun:
    """Run `handler` once on a task with `data` as a Worker runs an attempt, and say how
    it went (`AttemptRun`).

    The data is bound as the Worker binds it (data that does not validate is a
    non-retryable failure, without calling the handler); the handler gets the Worker's
    TaskContext, on a task claimed from a fake manager (`context_options` go to
    `make_context`: `stage_type`, `attempts`, `max_attempts`, `timeout_seconds`, ...);
    the Worker's heartbeat loop renews its lease every `heartbeat_interval`, sooner
    to carry progress.

    Cancellation, as the Worker cancels a handler (`asyncio.CancelledError` inside it):
    - `abort_at_heartbeat=n`: the job is aborted at the manager just before the n-th
      heartbeat, which is answered `cancelRequested`;
    - `lose_lease_at_heartbeat=n`: the lease runs out at the manager just before the
      n-th heartbeat, which is answered `LEASE_LOST`;
    - `cancel_after`: the job is aborted at the manager that long after the handler
      started; the next heartbeat hears of it;
    - `cancel_at_progress=p`: cancelled at once when the handler records `p` percent
      or more, as at a time limit;
    - `timeout_seconds=s` (of the task): the Worker's own time limit.
    """
    given = context_options.pop("client", None)
    logger = context_options.pop("logger", None)
    client = _Manager(
        given.manager if given is not None else FakeManager(),
        abort_at=abort_at_heartbeat,
        lose_lease_at=lose_lease_at_heartbeat,
    )
    made = make_context(data, client=client, **context_options)
    client.job_id, client.task_id = made.job.id, made.task.id
    log = WorkerLog(logging.getLogger("jobnik_sdk.worker"), [made.stage.type])
    # A heartbeat waits for the manager's answer, however busy the machine: what a test
    # looks at is what each heartbeat hears (a Worker gives up after an interval).
    leases = LeaseKeeper(
        client, lease=_LEASE, interval=heartbeat_interval, log=log, answer_within=_ANSWER
    )
    progress: list[Progress] = []

    def recorded() -> None:
        assert attempt.progress is not None
        progress.append(attempt.progress)
        leases.progress_recorded()
        if cancel_at_progress is not None and attempt.progress.percentage >= cancel_at_progress:
            attempt.drop(logging.INFO, _CANCELLED)

    attempt = Attempt(made.task, log=log, on_progress=recorded, stage=made.stage)
    ctx = attempt.context(made.job, made.stage, client, logger=logger)
    run = AttemptRun(context=ctx, progress=progress, heartbeats=client.sent)
    leases.add(attempt)
    beating = asyncio.create_task(leases.run())
    attempt.handler = asyncio.create_task(
        attempt.run(handler, data_binder(handler, data_model), ctx)
    )
    aborting = None
    if cancel_after is not None:
        aborting = asyncio.create_task(_abort_later(client, cancel_after))
    try:
        await asyncio.wait([attempt.handler])
    finally:
        leases.remove(attempt)
        for service in (beating, aborting):
            if service is not None:
                service.cancel()
                with suppress(asyncio.CancelledError):
                    await service
        if not attempt.handler.done():  # the test itself was cancelled
            attempt.handler.cancel()
    run.cancelled = attempt.dropped
    if attempt.dropped is None:
        run.outcome = attempt.outcome(shutting_down=False)
    elif not attempt.handler.cancelled():
        attempt.handler.exception()  # read, so asyncio does not warn of it
    run.events = [e async for e in client.iter_events(made.job.id) if e.name is not None]
    return run


async def _abort_later(client: _Manager, after: timedelta) -> None:
    await asyncio.sleep(after.total_seconds())
    await client.abort(client.job_id)
