"""FakeJobnik's consumer calls: claims, heartbeats and reports, served from memory."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from .._consumer import ClaimedTasks
from .._exceptions import ApiError
from .._models import EntityId, Task
from .._reports import (
    HeartbeatAnswer,
    HeartbeatOutcome,
    ReportError,
    ReportOutcome,
    TaskHeartbeat,
    TaskReport,
)
from ._rows import invalid, parse_id
from ._work import MAX_LEASE, State

MAX_WAIT = timedelta(seconds=60)
# How often a waiting claim looks again: the fake has no notice of work becoming ready.
_WAIT_STEP = 0.005


class FakeConsumerCalls:
    """The consumer half of FakeJobnik."""

    state: State

    async def dequeue(
        self, stage_type: str, *, lease: timedelta | None = None, worker: str | None = None
    ) -> Task | None:
        """As JobnikClient.dequeue."""
        rows = self.state.claim([stage_type], limit=1, lease=lease, worker=worker)
        return rows[0].model() if rows else None

    async def claim(
        self,
        stage_types: str | Sequence[str],
        *,
        limit: int = 1,
        lease: timedelta | None = None,
        worker: str | None = None,
        wait: timedelta | None = None,
    ) -> list[Task]:
        """As JobnikClient.claim: with `wait`, the claim waits (in real time, whatever
        `advance` did to the fake's clock) for tasks to become ready."""
        if wait is not None and not timedelta(0) <= wait <= MAX_WAIT:
            raise invalid("waitSeconds: Input should be between 0 and 60")
        types = [stage_types] if isinstance(stage_types, str) else list(stage_types)
        deadline = time.monotonic() + (wait.total_seconds() if wait is not None else 0.0)
        while True:
            rows = self.state.claim(types, limit=limit, lease=lease, worker=worker)
            if rows or time.monotonic() >= deadline:
                return [row.model() for row in rows]
            await asyncio.sleep(min(_WAIT_STEP, max(0.0, deadline - time.monotonic())))

    async def claim_with_context(
        self,
        stage_types: str | Sequence[str],
        *,
        limit: int = 1,
        lease: timedelta | None = None,
        worker: str | None = None,
        wait: timedelta | None = None,
    ) -> ClaimedTasks:
        """As JobnikClient.claim_with_context."""
        tasks = await self.claim(stage_types, limit=limit, lease=lease, worker=worker, wait=wait)
        stages = [self.state.stage(sid).model() for sid in dict.fromkeys(t.stage_id for t in tasks)]
        jobs = [self.state.job(jid).model() for jid in dict.fromkeys(st.job_id for st in stages)]
        return ClaimedTasks(items=tasks, stages=stages, jobs=jobs)

    async def heartbeat(
        self,
        task_id: EntityId,
        lease_id: EntityId,
        *,
        progress: int | None = None,
        lease: timedelta | None = None,
    ) -> HeartbeatAnswer:
        """As JobnikClient.heartbeat."""
        return self.state.heartbeat(task_id, lease_id, progress=progress, lease=lease)

    async def heartbeat_many(
        self, heartbeats: Sequence[TaskHeartbeat], *, lease: timedelta | None = None
    ) -> list[HeartbeatOutcome]:
        """As JobnikClient.heartbeat_many."""
        if not 1 <= len(heartbeats) <= 100:
            raise invalid("heartbeats: List should have between 1 and 100 items")
        # Malformed ids or lengths refuse the whole batch, as the manager's body
        # validation does.
        for beat in heartbeats:
            parse_id(beat.task_id)
            parse_id(beat.lease_id)
        if lease is not None and not timedelta(seconds=1) <= lease <= MAX_LEASE:
            raise invalid("leaseSeconds: Input should be between 1 and 604800")
        outcomes: list[HeartbeatOutcome] = []
        for beat in heartbeats:
            task_id = parse_id(beat.task_id)
            try:
                renewed = self.state.heartbeat(
                    task_id, beat.lease_id, progress=beat.progress, lease=lease
                )
            except ApiError as exc:
                error = ReportError(message=exc.message, code=exc.code)
                outcomes.append(HeartbeatOutcome(task_id=task_id, error=error))
            else:
                outcomes.append(
                    HeartbeatOutcome(
                        task_id=task_id,
                        lease_expires_at=renewed.lease_expires_at,
                        cancel_requested=renewed.cancel_requested,
                        job_status=renewed.job_status,
                    )
                )
        return outcomes

    async def complete(
        self,
        task_id: EntityId,
        *,
        lease_id: EntityId | None = None,
        result: dict[str, Any] | None = None,
    ) -> Task:
        """As JobnikClient.complete."""
        report = TaskReport.completed(task_id, lease_id=lease_id, result=result)
        return self.state.report(report).model()

    async def fail(
        self,
        task_id: EntityId,
        *,
        lease_id: EntityId | None = None,
        reason: str | None = None,
        retryable: bool = True,
    ) -> Task:
        """As JobnikClient.fail."""
        report = TaskReport.failed(task_id, lease_id=lease_id, reason=reason, retryable=retryable)
        return self.state.report(report).model()

    async def retry_later(
        self,
        task_id: EntityId,
        *,
        delay: timedelta,
        lease_id: EntityId | None = None,
        reason: str | None = None,
    ) -> Task:
        """As JobnikClient.retry_later."""
        report = TaskReport.retry_later(task_id, delay=delay, lease_id=lease_id, reason=reason)
        return self.state.report(report).model()

    async def report_many(
        self, reports: Sequence[TaskReport], *, with_tasks: bool = True
    ) -> list[ReportOutcome]:
        """As JobnikClient.report_many."""
        if not 1 <= len(reports) <= 100:
            raise invalid("reports: List should have between 1 and 100 items")
        # Malformed ids refuse the whole batch, as the manager's body validation does.
        task_ids = [parse_id(report.task_id) for report in reports]
        for report in reports:
            if report.lease_id is not None:
                parse_id(report.lease_id)
        outcomes: list[ReportOutcome] = []
        for task_id, report in zip(task_ids, reports, strict=True):
            try:
                task = self.state.report(report).model()
            except ApiError as exc:
                error = ReportError(message=exc.message, code=exc.code)
                outcomes.append(ReportOutcome(task_id=task_id, error=error))
            else:
                outcomes.append(ReportOutcome(task_id=task_id, task=task if with_tasks else None))
        return outcomes
