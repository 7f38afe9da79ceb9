"""One heartbeat loop for all of a Worker's running tasks: their leases are renewed
together, in one `heartbeat_many` call per interval."""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta

from ._attempt import Attempt, Progress
from ._client import ConsumerClient
from ._clock import SYSTEM_CLOCK, Clock, wait_event, within
from ._exceptions import ApiError, JobnikTransportError
from ._logs import Log, TaskIds
from ._metrics import Meter
from ._reports import HeartbeatOutcome, ReportError, TaskHeartbeat

# What one batch heartbeat may carry, by the manager's limits.
MAX_HEARTBEATS = 100
# What a manager without the batch call answers it with (the route is not there).
_NO_SUCH_CALL = frozenset({"NOT_FOUND", "METHOD_NOT_ALLOWED"})


class LeaseKeeper:
    """Renews the leases of the attempts whose handlers are running or yet to start,
    every `interval`, or a second after a handler recorded progress (at most an
    interval), to carry it.

    An answer that a task was aborted, that its lease was lost, or that it is gone
    drops the attempt: its handler is cancelled and nothing is reported for it. An
    attempt whose handler has finished is left to its report, which settles the lease.
    Against a manager without the batch call, each lease is renewed on its own.
    """

    def __init__(
        self,
        client: ConsumerClient,
        *,
        lease: timedelta,
        interval: timedelta,
        log: Log,
        meter: Meter | None = None,
        clock: Clock = SYSTEM_CLOCK,
        answer_within: timedelta | None = None,
    ) -> None:
        self._client = client
        # How long a beat waits for its answer; by default as `_deadline` says.
        self._answer_within = answer_within
        self._clock = clock
        self._meter = meter or Meter(None, [])
        self._lease = lease
        self._interval = interval.total_seconds()
        self._log = log
        self._attempts: dict[uuid.UUID, Attempt] = {}
        # When each kept lease runs out, on this process's monotonic clock, as last known.
        self._good_until: dict[uuid.UUID, float] = {}
        self._progress = asyncio.Event()
        self._one_by_one = False

    def add(self, attempt: Attempt) -> None:
        """Keep the attempt's lease from now on (a task claimed without one has none)."""
        if attempt.task.lease_id is not None:
            self._attempts[attempt.task.id] = attempt
            self._good_until[attempt.task.id] = (
                self._clock.monotonic() + self._lease.total_seconds()
            )

    def remove(self, attempt: Attempt) -> None:
        """Stop keeping the attempt's lease: its handler has finished."""
        attempt.ended()
        if self._attempts.get(attempt.task.id) is attempt:
            del self._attempts[attempt.task.id]
            self._good_until.pop(attempt.task.id, None)

    def progress_recorded(self) -> None:
        """Some handler has progress to send: beat early."""
        self._progress.set()

    async def run(self) -> None:
        """Beat until cancelled."""
        last = self._clock.monotonic()
        while True:
            await self._until_next_beat(last)
            # Claimed tasks waiting for a slot keep their leases too.
            live = [
                attempt
                for attempt in self._attempts.values()
                if attempt.handler is None or not attempt.handler.done()
            ]
            chunks = [live[i : i + MAX_HEARTBEATS] for i in range(0, len(live), MAX_HEARTBEATS)]
            try:
                await asyncio.gather(*(self._beat(chunk) for chunk in chunks))
            except Exception:
                # The leases of every running task hang on this loop: it must go on.
                self._log.exception("unexpected error while renewing %d lease(s)", len(live))
            last = self._clock.monotonic()

    def _has_news(self) -> bool:
        return any(attempt.unsent_progress is not None for attempt in self._attempts.values())

    async def _until_next_beat(self, last: float) -> None:
        due = last + self._interval
        if not self._has_news():
            self._progress.clear()
            await wait_event(self._progress, max(0.0, due - self._clock.monotonic()), self._clock)
        if self._has_news():
            due = min(due, last + min(1.0, self._interval))
        await self._clock.sleep(max(0.0, due - self._clock.monotonic()))

    async def _beat(self, attempts: list[Attempt]) -> None:
        beats = [
            TaskHeartbeat(
                task_id=attempt.task.id,
                lease_id=lease_id,
                progress=news.percentage if (news := attempt.unsent_progress) else None,
                message=news.message if news else None,
            )
            for attempt in attempts
            if (lease_id := attempt.task.lease_id) is not None  # as `add` made sure
        ]
        sent = self._clock.monotonic()
        deadline = self._deadline(attempts, sent)
        try:
            answers = await within(self._renew(beats), deadline, self._clock)
            self._meter.heartbeat(self._clock.monotonic() - sent)
        except (JobnikTransportError, ApiError) as exc:
            self._log.warning("heartbeat of %d task(s) failed: %s", len(beats), exc)
            return
        except TimeoutError:
            self._log.warning(
                "heartbeat of %d task(s) got no answer within %.1f s; giving up before "
                "their leases run out",
                len(beats),
                deadline,
            )
            return
        renewed_until = sent + self._lease.total_seconds()
        by_task = {answer.task_id: answer for answer in answers}
        for attempt, beat in zip(attempts, beats, strict=True):
            answer = by_task.get(attempt.task.id)
            # One that finished meanwhile is being reported; its report settles the lease.
            if answer is not None and self._attempts.get(attempt.task.id) is attempt:
                if answer.error is None:
                    self._good_until[attempt.task.id] = renewed_until
                self._heard(attempt, beat, answer)

    def _deadline(self, attempts: list[Attempt], now: float) -> float:
        """Seconds this beat may take: most of what is left of its earliest lease still
        live here (a tenth of the lease kept as a margin), and never more than an
        interval. When every lease it carries has run out as far as this process knows,
        there is nothing left to save by hurrying: the beat waits up to half a lease for
        the manager to say whether it was lost (a beat cut short would never hear it)."""
        if self._answer_within is not None:
            return self._answer_within.total_seconds()
        lease = self._lease.total_seconds()
        left = [self._good_until.get(a.task.id, now + lease) - now - lease / 10 for a in attempts]
        live = [seconds for seconds in left if seconds > 0]
        if not live:
            return max(self._interval, lease / 2)
        return max(0.05, min(self._interval, *live))

    def _heard(self, attempt: Attempt, beat: TaskHeartbeat, answer: HeartbeatOutcome) -> None:
        if answer.error is not None:
            code = answer.error.code
            if code == "LEASE_LOST" or code.endswith("NOT_FOUND"):
                why = "its lease was lost" if code == "LEASE_LOST" else "it no longer exists"
                attempt.drop(logging.WARNING, why, kind="lost")
                self._meter.lease_lost(self._meter.stage_type(attempt.ids.stage_type))
            else:
                self._log.warning(
                    "heartbeat of %s failed: %s: %s",
                    attempt.name,
                    code,
                    answer.error.message,
                    extra=attempt.extra,
                )
            return
        if beat.progress is not None:
            attempt.progress_sent(Progress(beat.progress, beat.message))
        if answer.cancel_requested:
            attempt.drop(logging.INFO, "its job was aborted")

    async def _renew(self, beats: list[TaskHeartbeat]) -> list[HeartbeatOutcome]:
        if not self._one_by_one:
            try:
                return await self._client.heartbeat_many(beats, lease=self._lease)
            except ApiError as exc:
                if exc.code not in _NO_SUCH_CALL:
                    raise
                self._one_by_one = True
                self._log.info(
                    "the manager has no batch heartbeats (%s); renewing leases one by one", exc
                )
        answers = await asyncio.gather(*(self._renew_one(beat) for beat in beats))
        return [answer for answer in answers if answer is not None]

    async def _renew_one(self, beat: TaskHeartbeat) -> HeartbeatOutcome | None:
        try:
            renewed = await self._client.heartbeat(
                beat.task_id,
                beat.lease_id,
                progress=beat.progress,
                message=beat.message,
                lease=self._lease,
            )
        except ApiError as exc:
            error = ReportError(message=exc.message, code=exc.code)
            return HeartbeatOutcome(task_id=beat.task_id, error=error)
        except JobnikTransportError as exc:
            attempt = self._attempts.get(uuid.UUID(str(beat.task_id)))
            ids = attempt.ids if attempt is not None else TaskIds(uuid.UUID(str(beat.task_id)))
            self._log.warning("heartbeat of %s failed: %s", ids.name, exc, extra=ids.extra)
            return None
        return HeartbeatOutcome(
            task_id=beat.task_id,
            lease_expires_at=renewed.lease_expires_at,
            cancel_requested=renewed.cancel_requested,
            job_status=renewed.job_status,
        )
