"""The fake manager's rules for work: claims with leases, heartbeats, reports (settled in
batches, as the manager settles them), retry delays, and leases that run out."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from .._models import Event, JobStatus, Priority, StageStatus, TaskStatus
from .._reports import HeartbeatAnswer, TaskReport
from ..wire import SystemReason
from ._refusals import Refused, illegal, invalid, lease_lost, not_found
from ._requests import TaskEventIn
from ._rows import TaskRow
from ._state import Rules

DEFAULT_LEASE = timedelta(minutes=30)
_PRIORITY_RANK = {p: i for i, p in enumerate(Priority)}
_CLAIMING_JOB = (JobStatus.PENDING, JobStatus.IN_PROGRESS)
_ACTIVE_STAGE = (StageStatus.PENDING, StageStatus.IN_PROGRESS)
# What a report may do to a task: settle a running one, or cancel one not yet final.
_REPORTABLE = {
    *((TaskStatus.IN_PROGRESS, reported) for reported in TaskStatus if reported.is_final),
    (TaskStatus.IN_PROGRESS, TaskStatus.RETRIED),
    (TaskStatus.PENDING, TaskStatus.ABORTED),
    (TaskStatus.RETRIED, TaskStatus.ABORTED),
}


class State(Rules):
    """The whole fake manager: `Rules`, plus claims, leases and reports."""

    def settle_due(self) -> None:
        """Expired leases are failed attempts, settled together as the manager's reaper
        settles them, oldest expiry first."""
        at = self.clock.now()
        expired = sorted(
            (
                t
                for t in self.tasks.values()
                if t.status is TaskStatus.IN_PROGRESS
                and t.lease_expires_at is not None
                and t.lease_expires_at < at
            ),
            key=lambda t: (t.lease_expires_at, t.seq),
        )
        if expired:
            self.settle(
                [TaskReport.failed(t.id, reason=SystemReason.LEASE_EXPIRED) for t in expired], at
            )
        # Then, as the manager's tick: attempts past their time limit, jobs past their
        # deadline.
        timed_out = sorted(
            (
                t
                for t in self.tasks.values()
                if t.status is TaskStatus.IN_PROGRESS
                and t.timeout_seconds is not None
                and t.start_time is not None
                and t.start_time + timedelta(seconds=t.timeout_seconds) <= at
            ),
            key=lambda t: (t.start_time or at, t.seq),
        )
        if timed_out:
            reason = SystemReason.TIMED_OUT
            self.settle([TaskReport.failed(t.id, reason=reason) for t in timed_out], at)
        for job in sorted(self.jobs.values(), key=lambda j: (j.deadline or at, j.seq)):
            if job.deadline is not None and job.deadline <= at and not job.status.is_final:
                self.fail_past_deadline(job, at)

    # ---- claims -------------------------------------------------------------------------

    def claim(
        self, stage_types: Sequence[str], *, limit: int, lease: timedelta | None, worker: str | None
    ) -> list[TaskRow]:
        """Up to `limit` ready tasks of these types, highest job priority then oldest;
        the first claim of a stage starts it, and its job."""
        at = self.clock.now()
        length = lease or DEFAULT_LEASE
        wanted = set(stage_types)
        ready = sorted(
            (t for t in self.tasks.values() if self._claimable(t, wanted, at)),
            key=lambda t: (_PRIORITY_RANK[self.jobs[t.job_id].priority], t.seq),
        )[:limit]
        for task in ready:
            task.lease_id, task.lease_expires_at = uuid.uuid4(), at + length
            task.lease_seconds, task.worker = length.total_seconds(), worker
            task.progress, task.not_before, task.start_time = None, None, at
            task.progress_message = None
            self.move_task(task, TaskStatus.IN_PROGRESS, at)
        stages = {self.stages[t.stage_id] for t in ready}
        for stage in sorted(stages, key=lambda st: st.id):
            if stage.status is StageStatus.PENDING:
                self.move_stage(stage, StageStatus.IN_PROGRESS, at)
        for job in sorted({self.jobs[st.job_id] for st in stages}, key=lambda j: j.id):
            if job.status is JobStatus.PENDING:
                self.move_job(job, JobStatus.IN_PROGRESS, at)
        return ready

    def _claimable(self, task: TaskRow, stage_types: set[str], at: datetime) -> bool:
        stage = self.stages[task.stage_id]
        return (
            task.status in (TaskStatus.PENDING, TaskStatus.RETRIED)
            and (task.not_before is None or task.not_before <= at)
            and stage.type in stage_types
            and stage.status in _ACTIVE_STAGE
            and self.jobs[task.job_id].status in _CLAIMING_JOB
        )

    # ---- leases -------------------------------------------------------------------------

    def heartbeat(
        self,
        task_id: uuid.UUID,
        lease_id: uuid.UUID,
        progress: int | None,
        message: str | None,
        lease: timedelta | None,
    ) -> HeartbeatAnswer:
        """Extend a live lease; an aborted task tells its holder to stop."""
        task = self.task(task_id)
        job_status = self.jobs[task.job_id].status
        at = self.clock.now()
        if task.status is TaskStatus.ABORTED and task.lease_id == lease_id:
            return HeartbeatAnswer(
                lease_expires_at=task.lease_expires_at or at,
                cancel_requested=True,
                job_status=job_status,
            )
        if not _live(task, lease_id, at):
            raise lease_lost()
        if lease is not None:
            task.lease_seconds = lease.total_seconds()
        length = timedelta(seconds=task.lease_seconds) if task.lease_seconds else DEFAULT_LEASE
        task.lease_expires_at = at + length
        if progress is not None:
            task.progress = progress
        if message is not None:
            task.progress_message = message
        return HeartbeatAnswer(
            lease_expires_at=task.lease_expires_at, cancel_requested=False, job_status=job_status
        )

    def add_task_event(self, task_id: uuid.UUID, spec: TaskEventIn) -> Event:
        """An entry for the task's job history; only the lease's holder adds one while
        the task runs."""
        task = self.task(task_id)
        at = self.clock.now()
        running = task.status is TaskStatus.IN_PROGRESS
        if running and spec.lease_id is None:
            raise invalid(
                "leaseId is required while the task runs: only its holder adds to its history"
            )
        if spec.lease_id is not None and not _live(task, spec.lease_id, at):
            raise lease_lost()
        entry = spec.model_dump(include={"name", "level", "message", "fields"})
        return self.events.added(task, at, running, **entry)

    # ---- reports ------------------------------------------------------------------------

    def settle(
        self, reports: Sequence[TaskReport], at: datetime | None = None
    ) -> list[TaskRow | Refused]:
        """Settle each report: every task moves first, in the reports' order, then the
        stages they leave done complete or fail, in stage id order. Answers, in order,
        the task or why its report was refused."""
        at = at or self.clock.now()
        answers: list[TaskRow | Refused] = []
        touched: dict[uuid.UUID, None] = {}
        for report in reports:
            task = self.tasks.get(uuid.UUID(str(report.task_id)))
            try:
                if task is None:
                    raise not_found("Task")
                if self._apply(task, report, at):
                    touched[task.stage_id] = None
            except Refused as refused:
                answers.append(refused)
            else:
                answers.append(task)
        for stage_id in sorted(touched):
            self.settle_stage(self.stages[stage_id], at)
        return answers

    def _apply(self, task: TaskRow, report: TaskReport, at: datetime) -> bool:
        """Move the task as `report` says; False when it repeats a completion."""
        lease_id = uuid.UUID(str(report.lease_id)) if report.lease_id is not None else None
        if lease_id is not None and not _live(task, lease_id, at):
            if (
                report.status is TaskStatus.COMPLETED
                and task.status is TaskStatus.COMPLETED
                and task.lease_id == lease_id
            ):
                return False  # the answer to the first report was lost; say it again
            raise lease_lost()
        if (task.status, report.status) not in _REPORTABLE:
            raise illegal("TASK", task.status, report.status)
        target = report.status
        if target is TaskStatus.ABORTED:  # cancelled, whoever holds it
            task.not_before = None
            task.reason = report.reason or SystemReason.CANCELLED_BY_USER
            self.move_task(task, target, at, task.reason)
            return True
        delay = report.retry_after
        if target is TaskStatus.FAILED:
            task.attempts += 1
            if report.retryable and task.attempts < task.max_attempts:
                target = TaskStatus.RETRIED
                policy = task.retry_policy
                delay = policy.delay_after(task.attempts) if policy is not None else None
        if target is TaskStatus.COMPLETED:
            task.result, task.reason, task.progress = report.result, None, 100
        else:
            task.reason = report.reason
        if delay is not None and delay > timedelta(0):
            task.not_before = at + delay
        self.move_task(task, target, at, report.reason)
        return True


def _live(task: TaskRow, offered: uuid.UUID, at: datetime) -> bool:
    return (
        task.status is TaskStatus.IN_PROGRESS
        and task.lease_id == offered
        and task.lease_expires_at is not None
        and task.lease_expires_at > at
    )
