"""The fake manager's rules for creating and steering jobs, and what a finished or failed
stage brings about. Claims, leases and reports are in `_work.py`.

Every transition is the manager's, logged in the manager's order (the parity tests in
the repository hold the two to the same event history): a move of many rows of one kind
(an abort) logs them by their status before, one status after another.
"""

from __future__ import annotations

import itertools
import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from .._models import JobStatus, Priority, StageStatus, TaskRetryPolicy, TaskStatus
from ..wire import SystemReason
from ._clock import FakeClock
from ._events import EventLog
from ._refusals import Refused, illegal, not_found, rule
from ._requests import JobIn, StageIn, TaskIn
from ._rows import JobRow, Row, StageRow, TaskRow, percentage

_CLAIMABLE = (TaskStatus.PENDING, TaskStatus.RETRIED)
_NON_FINAL_TASK = [s for s in TaskStatus if not s.is_final]
_NON_FINAL_STAGE = [s for s in StageStatus if not s.is_final]
# What a user may ask of a job: from one status, to another.
_USER_JOB_MOVES = {
    (JobStatus.CREATED, JobStatus.ABORTED),
    (JobStatus.PENDING, JobStatus.PAUSED),
    (JobStatus.PENDING, JobStatus.ABORTED),
    (JobStatus.IN_PROGRESS, JobStatus.PAUSED),
    (JobStatus.IN_PROGRESS, JobStatus.ABORTED),
    (JobStatus.PAUSED, JobStatus.PENDING),
    (JobStatus.PAUSED, JobStatus.ABORTED),
}
RowT = TypeVar("RowT", bound=Row)


def new_traceparent(parent: str | None = None) -> str:
    """A fresh span, in the parent's trace when there is one (as the manager makes it)."""
    trace_id = parent.split("-")[1] if parent else secrets.token_hex(16)
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"


class Rules:
    """Jobs, stages and tasks in memory, changed only through the manager's rules."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.jobs: dict[uuid.UUID, JobRow] = {}
        self.stages: dict[uuid.UUID, StageRow] = {}
        self.tasks: dict[uuid.UUID, TaskRow] = {}
        self.events = EventLog()
        self._seq = itertools.count(1)

    # ---- lookups ------------------------------------------------------------------------

    def job(self, job_id: uuid.UUID) -> JobRow:
        row = self.jobs.get(job_id)
        if row is None:
            raise not_found("Job")
        return row

    def stage(self, stage_id: uuid.UUID) -> StageRow:
        row = self.stages.get(stage_id)
        if row is None:
            raise not_found("Stage")
        return row

    def task(self, task_id: uuid.UUID) -> TaskRow:
        row = self.tasks.get(task_id)
        if row is None:
            raise not_found("Task")
        return row

    # ---- status changes, each logged ----------------------------------------------------

    def move_job(
        self, job: JobRow, status: JobStatus, at: datetime, reason: str | None = None
    ) -> None:
        previous, job.status, job.update_time = job.status, status, at
        _stamp(job, at)
        self.events.job(job, previous, at, reason)

    def move_stage(self, stage: StageRow, status: StageStatus, at: datetime) -> None:
        previous, stage.status, stage.update_time = stage.status, status, at
        _stamp(stage, at)
        self.events.stage(stage, previous, at)

    def move_task(
        self, task: TaskRow, status: TaskStatus, at: datetime, reason: str | None = None
    ) -> None:
        previous, task.status, task.update_time = task.status, status, at
        if status.is_final:
            task.end_time = at
            if reason is not None:
                task.reason = reason  # the task says why it ended, as its event does
        self.events.task(task, previous, at, reason)

    # ---- creation -----------------------------------------------------------------------

    def _new(
        self,
        row: type[RowT],
        spec: JobIn | StageIn | TaskIn,
        at: datetime,
        parent: str | None = None,
        **fields: Any,
    ) -> RowT:
        """A new row of `spec`, in the trace of its `parent`'s traceparent if any."""
        return row(
            id=uuid.uuid4(),
            seq=next(self._seq),
            data=spec.data,
            user_metadata=spec.user_metadata,
            creation_time=at,
            update_time=at,
            traceparent=spec.traceparent or new_traceparent(parent),
            tracestate=spec.tracestate,
            **fields,
        )

    def create_job(self, spec: JobIn) -> JobRow:
        at = self.clock.now()
        job = self._new(JobRow, spec, at, name=spec.name, priority=spec.priority)
        job.not_before, job.deadline = _to_come(spec.not_before, at), spec.deadline
        self.jobs[job.id] = job
        self.events.job(job, None, at)
        for stage in spec.stages or ():
            self._insert_stage(job, stage, at)
        # A first stage created with an empty list of tasks (not none, to add later): its
        # turn came with the job, and it passes at once.
        if (
            spec.stages
            and spec.stages[0].tasks == []
            and job.stages[0].status is StageStatus.PENDING
        ):
            self.complete_stage(job, job.stages[0], at)
        return job

    def add_stage(self, job_id: uuid.UUID, spec: StageIn) -> StageRow:
        job = self.job(job_id)
        if job.status.is_final:
            raise rule(
                f"Job is {job.status}; stages cannot be added to a finished job",
                "JOB_IN_FINITE_STATE",
            )
        at = self.clock.now()
        job.update_time = at
        return self._insert_stage(job, spec, at)

    def _insert_stage(self, job: JobRow, spec: StageIn, at: datetime) -> StageRow:
        previous = job.stages[-1] if job.stages else None
        if spec.start_as_waiting:
            status = StageStatus.WAITING
        elif previous is None or previous.status is StageStatus.COMPLETED:
            status = StageStatus.PENDING
        else:
            status = StageStatus.CREATED
        stage = self._new(
            StageRow,
            spec,
            at,
            parent=job.traceparent,
            job_id=job.id,
            type=spec.type,
            order=len(job.stages) + 1,
            status=status,
            retry_policy=_policy(spec),
            allowed_failures=spec.allowed_failures,
            timeout_seconds=spec.timeout_seconds,
        )
        job.stages.append(stage)
        self.stages[stage.id] = stage
        self.events.stage(stage, None, at)
        if spec.tasks:
            self._insert_tasks(stage, spec.tasks, at)
        return stage

    def add_tasks(self, stage_id: uuid.UUID, specs: Sequence[TaskIn]) -> list[TaskRow]:
        return self._insert_tasks(self.stage(stage_id), specs, self.clock.now())

    def _insert_tasks(
        self, stage: StageRow, specs: Sequence[TaskIn], at: datetime
    ) -> list[TaskRow]:
        if stage.status.is_final:
            raise rule(
                f"Stage is {stage.status}; tasks cannot be added to a finished stage",
                "STAGE_IN_FINITE_STATE",
            )
        if stage.status is StageStatus.IN_PROGRESS:
            raise rule(
                "Tasks cannot be added to a stage that is IN_PROGRESS",
                "NOT_ALLOWED_TO_ADD_TASKS_TO_IN_PROGRESS_STAGE",
            )
        job = self.jobs[stage.job_id]
        rows = [
            self._new(
                TaskRow,
                spec,
                at,
                parent=stage.traceparent,
                stage_id=stage.id,
                job_id=stage.job_id,
                max_attempts=spec.max_attempts,
                retry_policy=_policy(spec) or stage.retry_policy,
                not_before=_to_come(_later(spec.not_before, job.not_before), at),
                timeout_seconds=spec.timeout_seconds or stage.timeout_seconds,
            )
            for spec in specs
        ]
        stage.tasks.extend(rows)
        for row in rows:
            self.tasks[row.id] = row
            self.events.task(row, None, at, None)
        return rows

    # ---- steering -----------------------------------------------------------------------

    def approve(self, stage_id: uuid.UUID) -> None:
        """PENDING for a WAITING (or CREATED) stage once the stage before it completed."""
        stage = self.stage(stage_id)
        job = self.jobs[stage.job_id]
        if stage.status is StageStatus.PENDING:
            return
        if job.status.is_final or stage.status not in (StageStatus.WAITING, StageStatus.CREATED):
            raise illegal("STAGE", stage.status, StageStatus.PENDING)
        if stage.order > 1 and job.stages[stage.order - 2].status is not StageStatus.COMPLETED:
            raise rule("Previous stage is not COMPLETED", "ILLEGAL_STAGE_STATUS_TRANSITION")
        at = self.clock.now()
        self.move_stage(stage, StageStatus.PENDING, at)
        if not stage.tasks:
            self.complete_stage(job, stage, at)  # nothing to run: its turn passes at once

    def set_job_status(self, job_id: uuid.UUID, target: JobStatus) -> None:
        job = self.job(job_id)
        if (job.status, target) not in _USER_JOB_MOVES:
            raise illegal("JOB", job.status, target)
        at = self.clock.now()
        if target is JobStatus.ABORTED:
            self._abort(job, at)
        elif target is JobStatus.PAUSED:
            self.move_job(job, JobStatus.PAUSED, at)
        else:
            resumed = self._resumed_status(job)
            if resumed is JobStatus.COMPLETED:
                job.partial = any(st.partial for st in job.stages)
            self.move_job(job, resumed, at)
            if job.status is JobStatus.COMPLETED:
                job.percentage = 100

    def _abort(self, job: JobRow, at: datetime) -> None:
        """Every unfinished task, then every unfinished stage, then the job: ABORTED."""
        self._abort_unfinished(job, at, SystemReason.JOB_ABORTED)
        job.reason = SystemReason.ABORTED_BY_USER
        self.move_job(job, JobStatus.ABORTED, at)
        job.percentage = _job_percentage(job)

    def _abort_unfinished(self, job: JobRow, at: datetime, reason: str) -> None:
        tasks = [task for stage in job.stages for task in stage.tasks]
        for task_status in _NON_FINAL_TASK:
            for task in [t for t in tasks if t.status is task_status]:
                task.not_before = None
                self.move_task(task, TaskStatus.ABORTED, at, reason)
        for stage_status in _NON_FINAL_STAGE:
            for stage in [st for st in job.stages if st.status is stage_status]:
                stage.reason = reason
                self.move_stage(stage, StageStatus.ABORTED, at)

    def fail_past_deadline(self, job: JobRow, at: datetime) -> None:
        """A job not final by its deadline fails; its unfinished tasks and stages abort."""
        self._abort_unfinished(job, at, SystemReason.DEADLINE_EXCEEDED)
        job.reason = SystemReason.DEADLINE_EXCEEDED
        self.move_job(job, JobStatus.FAILED, at, SystemReason.DEADLINE_EXCEEDED)
        job.percentage = _job_percentage(job)

    @staticmethod
    def _resumed_status(job: JobRow) -> JobStatus:
        statuses = [st.status for st in job.stages]
        if StageStatus.FAILED in statuses:
            return JobStatus.FAILED
        if statuses and all(s is StageStatus.COMPLETED for s in statuses):
            return JobStatus.COMPLETED
        started = any(t.start_time is not None for st in job.stages for t in st.tasks)
        return JobStatus.IN_PROGRESS if started else JobStatus.PENDING

    def retry_job(self, job_id: uuid.UUID) -> JobRow:
        """A FAILED job's failed stage runs again: its FAILED and ABORTED tasks get a fresh
        set of attempts; the stage and the job go back to IN_PROGRESS."""
        job = self.job(job_id)
        if job.status is not JobStatus.FAILED:
            raise Refused(
                409, "JOB_NOT_FAILED", f"Job is {job.status}; only a FAILED job can be retried"
            )
        at = self.clock.now()
        stage = next(st for st in job.stages if st.status is StageStatus.FAILED)
        for source in (TaskStatus.FAILED, TaskStatus.ABORTED):
            for task in [t for t in stage.tasks if t.status is source]:
                task.attempts, task.end_time, task.not_before = 0, None, None
                task.lease_id = task.lease_expires_at = task.lease_seconds = None
                self.move_task(task, TaskStatus.PENDING, at, SystemReason.RETRIED_BY_USER)
                task.reason = None
        stage.reason = None
        self.move_stage(stage, StageStatus.IN_PROGRESS, at)
        job.reason = job.failed_task_id = job.failed_stage_id = None
        self.move_job(job, JobStatus.IN_PROGRESS, at, SystemReason.RETRIED_BY_USER)
        return job

    def set_priority(self, job_id: uuid.UUID, priority: Priority) -> bool:
        job = self.job(job_id)
        if job.priority is priority:
            return False
        job.priority, job.update_time = priority, self.clock.now()
        return True

    def delete_job(self, job_id: uuid.UUID) -> None:
        job = self.job(job_id)
        if not job.status.is_final:
            raise rule(
                f"Job is {job.status}; only a COMPLETED, FAILED or ABORTED job can be deleted",
                "JOB_NOT_IN_FINITE_STATE",
            )
        for stage in job.stages:
            for task in stage.tasks:
                del self.tasks[task.id]
            del self.stages[stage.id]
        del self.jobs[job.id]
        self.events.forget(job.id)

    # ---- what follows from a stage's tasks ----------------------------------------------

    def settle_stage(self, stage: StageRow, at: datetime) -> None:
        """After tasks of `stage` moved: fail or complete it if it is done. A stage whose
        turn has not come waits for it; a cancelled task counts as neither done nor failed."""
        if stage.status not in (StageStatus.PENDING, StageStatus.IN_PROGRESS):
            return
        job = self.jobs[stage.job_id]
        if stage.summary()["failed"] > stage.allowed_failures:
            self._fail_job_from(job, stage, at)
        elif stage.tasks and not _open(stage):
            self.complete_stage(job, stage, at)

    def _fail_job_from(self, job: JobRow, stage: StageRow, at: datetime) -> None:
        """A task failed for good: its stage and job fail; its tasks that have not
        started are aborted (running ones may still report)."""
        failed = [t for t in stage.tasks if t.status is TaskStatus.FAILED]
        last = max(failed, key=lambda t: (t.end_time or at, t.seq), default=None)
        stage.reason = job.reason = (last.reason if last else None) or SystemReason.TASK_FAILED
        job.failed_stage_id, job.failed_task_id = stage.id, last.id if last else None
        self.move_stage(stage, StageStatus.FAILED, at)
        self.move_job(job, JobStatus.FAILED, at)
        for source in _CLAIMABLE:
            for task in [t for t in stage.tasks if t.status is source]:
                task.not_before = None
                self.move_task(task, TaskStatus.ABORTED, at, SystemReason.STAGE_FAILED)

    def complete_stage(self, job: JobRow, stage: StageRow, at: datetime) -> None:
        """Complete `stage` and pass the turn on: the next stage runs (or, without tasks,
        completes at once, and so on), or stays WAITING for approval; after the last,
        the job completes, unless it is paused (then its resume completes it)."""
        if stage.status is not StageStatus.COMPLETED:
            stage.partial = stage.summary()["failed"] > 0  # failures it allowed
            self.move_stage(stage, StageStatus.COMPLETED, at)
        while True:
            following = job.stages[stage.order] if stage.order < len(job.stages) else None
            if following is None:
                if job.status is not JobStatus.PAUSED:
                    job.partial = any(st.partial for st in job.stages)
                    self.move_job(job, JobStatus.COMPLETED, at)
                break
            if following.status is not StageStatus.CREATED:
                break  # WAITING: it holds until approved
            self.move_stage(following, StageStatus.PENDING, at)
            if _open(following):
                break
            self.move_stage(following, StageStatus.COMPLETED, at)
            stage = following
        job.percentage = _job_percentage(job)
        job.update_time = at


def _open(stage: StageRow) -> int:
    """Its tasks not final yet."""
    return sum(1 for task in stage.tasks if not task.status.is_final)


def _later(*times: datetime | None) -> datetime | None:
    return max((t for t in times if t is not None), default=None)


def _to_come(time: datetime | None, at: datetime) -> datetime | None:
    """A schedule still to come, or None (a past one holds nothing back)."""
    return time if time is not None and time > at else None


def _stamp(row: JobRow | StageRow, at: datetime) -> None:
    """A job or stage starts at its first IN_PROGRESS and ends at a final status."""
    if row.status == "IN_PROGRESS" and row.start_time is None:
        row.start_time = at
    row.end_time = (row.end_time or at) if row.status.is_final else None


def _policy(spec: StageIn | TaskIn) -> TaskRetryPolicy | None:
    return spec.retry_policy.policy() if spec.retry_policy else None


def _job_percentage(job: JobRow) -> int:
    done = sum(1 for st in job.stages if st.status is StageStatus.COMPLETED)
    return percentage(done, len(job.stages))
