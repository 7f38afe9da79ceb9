"""The fake manager's rules for work: claims with leases, heartbeats, reports, retry
delays, and the reaping of leases that ran out."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from .._models import EntityId, JobStatus, StageStatus, TaskStatus
from .._reports import MAX_REASON, HeartbeatAnswer, TaskReport
from ._rows import PRIORITY_RANK, TaskRow, illegal, invalid, lease_lost, parse_id
from ._state import CLAIMABLE_TASK, Rules

DEFAULT_LEASE = timedelta(minutes=30)
MAX_LEASE = timedelta(days=7)
LEASE_EXPIRED = "lease expired"
_CLAIMING_JOB = (JobStatus.PENDING, JobStatus.IN_PROGRESS)
_ACTIVE_STAGE = (StageStatus.PENDING, StageStatus.IN_PROGRESS)


class State(Rules):
    """The whole fake manager: `Rules` plus claims, leases and reports."""

    def __init__(self) -> None:
        super().__init__()
        # Tasks that may hold a lease, so reaping looks at these only.
        self._leased: set[uuid.UUID] = set()

    def reap(self) -> None:
        """An expired lease counts as a failed attempt, as the manager's reaper has it."""
        at = self.now()
        for task_id in list(self._leased):
            task = self.tasks.get(task_id)
            if task is None or task.status is not TaskStatus.IN_PROGRESS:
                self._leased.discard(task_id)
            elif task.lease_expires_at is not None and task.lease_expires_at <= at:
                self._leased.discard(task_id)
                self._fail_attempt(task, at, reason=LEASE_EXPIRED, retryable=True)

    # ---- claims -------------------------------------------------------------------------

    def claim(
        self,
        stage_types: Sequence[str],
        *,
        limit: int = 1,
        lease: timedelta | None = None,
        worker: str | None = None,
    ) -> list[TaskRow]:
        if not 1 <= len(stage_types) <= 20 or any(not 1 <= len(t) <= 50 for t in stage_types):
            raise invalid("stageTypes: 1 to 20 stage types of 1 to 50 characters")
        if not 1 <= limit <= 100:
            raise invalid("limit: Input should be between 1 and 100")
        length = _lease_length(lease)
        if worker is not None and not 1 <= len(worker) <= 100:
            raise invalid("worker: String should have between 1 and 100 characters")
        self.reap()
        at = self.now()
        wanted = set(stage_types)
        ready = sorted(
            (task for task in self.tasks.values() if self._claimable(task, wanted, at)),
            key=lambda t: (PRIORITY_RANK[self.jobs[t.job_id].priority], t.seq),
        )[:limit]
        for task in ready:
            task.lease_id, task.lease_expires_at = uuid.uuid4(), at + length
            task.lease_seconds, task.worker = length.total_seconds(), worker
            task.progress, task.not_before, task.start_time = None, None, at
            self.move_task(task, TaskStatus.IN_PROGRESS, at)
            self._leased.add(task.id)
        for task in ready:
            stage, job = self.stages[task.stage_id], self.jobs[task.job_id]
            if stage.status is StageStatus.PENDING:
                self.move_stage(stage, StageStatus.IN_PROGRESS, at)
            if job.status is JobStatus.PENDING:
                self.move_job(job, JobStatus.IN_PROGRESS, at)
        return ready

    def _claimable(self, task: TaskRow, stage_types: set[str], at: datetime) -> bool:
        stage = self.stages[task.stage_id]
        return (
            task.status in CLAIMABLE_TASK
            and (task.not_before is None or task.not_before <= at)
            and stage.type in stage_types
            and stage.status in _ACTIVE_STAGE
            and self.jobs[task.job_id].status in _CLAIMING_JOB
        )

    # ---- leases -------------------------------------------------------------------------

    def heartbeat(
        self,
        task_id: EntityId,
        lease_id: EntityId,
        *,
        progress: int | None,
        lease: timedelta | None,
    ) -> HeartbeatAnswer:
        offered = parse_id(lease_id)
        if progress is not None and not 0 <= progress <= 100:
            raise invalid("progress: Input should be between 0 and 100")
        length = _lease_length(lease) if lease is not None else None
        task = self.task(task_id)
        job_status = self.jobs[task.job_id].status
        at = self.now()
        if task.status is TaskStatus.ABORTED and task.lease_id == offered:
            return HeartbeatAnswer(
                lease_expires_at=task.lease_expires_at or at,
                cancel_requested=True,
                job_status=job_status,
            )
        if not self._live(task, offered, at):
            raise lease_lost()
        if length is not None:
            task.lease_seconds = length.total_seconds()
        seconds = task.lease_seconds or DEFAULT_LEASE.total_seconds()
        task.lease_expires_at = at + timedelta(seconds=seconds)
        if progress is not None:
            task.progress = progress
        return HeartbeatAnswer(
            lease_expires_at=task.lease_expires_at, cancel_requested=False, job_status=job_status
        )

    @staticmethod
    def _live(task: TaskRow, offered: uuid.UUID, at: datetime) -> bool:
        return (
            task.status is TaskStatus.IN_PROGRESS
            and task.lease_id == offered
            and task.lease_expires_at is not None
            and task.lease_expires_at > at
        )

    # ---- reports ------------------------------------------------------------------------

    def report(self, report: TaskReport) -> TaskRow:
        task = self.task(report.task_id)
        offered = parse_id(report.lease_id) if report.lease_id is not None else None
        at = self.now()
        if offered is not None and not self._live(task, offered, at):
            if (
                report.status is TaskStatus.COMPLETED
                and task.status is TaskStatus.COMPLETED
                and task.lease_id == offered
            ):
                return task  # the answer to the first report was lost; say it again
            raise lease_lost()
        if task.status is not TaskStatus.IN_PROGRESS:
            raise illegal("TASK", task.status, report.status)
        self._leased.discard(task.id)
        if report.status is TaskStatus.COMPLETED:
            task.result, task.reason = report.result, None
            self.move_task(task, TaskStatus.COMPLETED, at)
            self.settle(self.stages[task.stage_id], at)
        elif report.status is TaskStatus.FAILED:
            self._fail_attempt(task, at, reason=report.reason, retryable=report.retryable)
        else:
            task.reason = report.reason
            delay = report.retry_after or timedelta(0)
            task.not_before = at + delay if delay > timedelta(0) else None
            self.move_task(task, TaskStatus.RETRIED, at, report.reason)
            self.settle(self.stages[task.stage_id], at)
        return task

    def _fail_attempt(
        self, task: TaskRow, at: datetime, *, reason: str | None, retryable: bool
    ) -> None:
        task.attempts += 1
        task.reason = reason[:MAX_REASON] if reason is not None else None
        if retryable and task.attempts < task.max_attempts:
            delay = task.retry_policy.delay_after(task.attempts) if task.retry_policy else None
            task.not_before = at + delay if delay else None
            self.move_task(task, TaskStatus.RETRIED, at, reason)
        else:
            self.move_task(task, TaskStatus.FAILED, at, reason)
        self.settle(self.stages[task.stage_id], at)


def _lease_length(lease: timedelta | None) -> timedelta:
    if lease is None:
        return DEFAULT_LEASE
    if not timedelta(seconds=1) <= lease <= MAX_LEASE:
        raise invalid("leaseSeconds: Input should be between 1 and 604800")
    return lease
