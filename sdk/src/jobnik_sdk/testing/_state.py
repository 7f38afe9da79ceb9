"""The fake manager's rules, synchronous: the same transitions as the manager's for the
common path (create, approve, claim, report with retries, stage order, pause, resume,
abort, delete)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .._models import (
    EntityId,
    JobStatus,
    NewStage,
    NewTask,
    Priority,
    StageStatus,
    TaskStatus,
)
from ._rows import (
    PRIORITY_RANK,
    JobRow,
    StageRow,
    TaskRow,
    illegal,
    invalid,
    not_found,
    now,
    parse_id,
    refused,
)

_CLAIMING_JOB = (JobStatus.PENDING, JobStatus.IN_PROGRESS)
_ACTIVE_STAGE = (StageStatus.PENDING, StageStatus.IN_PROGRESS)
_CLAIMABLE_TASK = (TaskStatus.PENDING, TaskStatus.RETRIED)
_USER_JOB_MOVES = {
    (JobStatus.PENDING, JobStatus.PAUSED),
    (JobStatus.IN_PROGRESS, JobStatus.PAUSED),
    (JobStatus.PAUSED, JobStatus.PENDING),
    (JobStatus.CREATED, JobStatus.ABORTED),
    (JobStatus.PENDING, JobStatus.ABORTED),
    (JobStatus.IN_PROGRESS, JobStatus.ABORTED),
    (JobStatus.PAUSED, JobStatus.ABORTED),
}


class State:
    """Jobs, stages and tasks in memory, changed only through the manager's rules."""

    def __init__(self) -> None:
        self.jobs: dict[uuid.UUID, JobRow] = {}
        self.stages: dict[uuid.UUID, StageRow] = {}
        self.tasks: dict[uuid.UUID, TaskRow] = {}
        self._seq = itertools.count(1)

    # ---- lookups ------------------------------------------------------------------------

    def job(self, job_id: EntityId) -> JobRow:
        row = self.jobs.get(parse_id(job_id))
        if row is None:
            raise not_found("Job")
        return row

    def stage(self, stage_id: EntityId) -> StageRow:
        row = self.stages.get(parse_id(stage_id))
        if row is None:
            raise not_found("Stage")
        return row

    def task(self, task_id: EntityId) -> TaskRow:
        row = self.tasks.get(parse_id(task_id))
        if row is None:
            raise not_found("Task")
        return row

    # ---- creation -----------------------------------------------------------------------

    def create_job(
        self,
        name: str,
        data: Mapping[str, Any],
        *,
        priority: Priority,
        user_metadata: Mapping[str, Any] | None,
        stages: Sequence[NewStage],
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> JobRow:
        if not 2 <= len(name) <= 50:
            raise invalid("name: String should have between 2 and 50 characters")
        job = JobRow(
            id=uuid.uuid4(),
            seq=next(self._seq),
            name=name,
            data=dict(data),
            user_metadata=dict(user_metadata or {}),
            priority=Priority(priority),
            traceparent=traceparent,
            tracestate=tracestate,
        )
        self.jobs[job.id] = job
        for spec in stages:
            self._insert_stage(job, spec)
        return job

    def add_stage(self, job_id: EntityId, spec: NewStage) -> StageRow:
        job = self.job(job_id)
        if job.status.is_final:
            raise refused(
                f"Job is {job.status}; stages cannot be added to a finished job",
                "JOB_IN_FINITE_STATE",
            )
        job.update_time = now()
        return self._insert_stage(job, spec)

    def _insert_stage(self, job: JobRow, spec: NewStage) -> StageRow:
        if not 1 <= len(spec.type) <= 50:
            raise invalid("type: String should have between 1 and 50 characters")
        previous = job.stages[-1] if job.stages else None
        if spec.start_as_waiting:
            status = StageStatus.WAITING
        elif previous is None or previous.status is StageStatus.COMPLETED:
            status = StageStatus.PENDING
        else:
            status = StageStatus.CREATED
        stage = StageRow(
            id=uuid.uuid4(),
            job_id=job.id,
            seq=next(self._seq),
            type=spec.type,
            order=len(job.stages) + 1,
            data=dict(spec.data),
            user_metadata=dict(spec.user_metadata or {}),
            status=status,
            traceparent=spec.traceparent,
            tracestate=spec.tracestate,
        )
        job.stages.append(stage)
        self.stages[stage.id] = stage
        if spec.tasks:
            self._insert_tasks(stage, spec.tasks)
        return stage

    def add_tasks(self, stage_id: EntityId, specs: Sequence[NewTask]) -> list[TaskRow]:
        if not specs:
            raise invalid("body: List should have at least 1 item")
        return self._insert_tasks(self.stage(stage_id), specs)

    def _insert_tasks(self, stage: StageRow, specs: Sequence[NewTask]) -> list[TaskRow]:
        if stage.status.is_final:
            raise refused(
                f"Stage is {stage.status}; tasks cannot be added to a finished stage",
                "STAGE_IN_FINITE_STATE",
            )
        if stage.status is StageStatus.IN_PROGRESS:
            raise refused(
                "Tasks cannot be added to a stage that is IN_PROGRESS",
                "NOT_ALLOWED_TO_ADD_TASKS_TO_IN_PROGRESS_STAGE",
            )
        rows = [
            TaskRow(
                id=uuid.uuid4(),
                stage_id=stage.id,
                job_id=stage.job_id,
                seq=next(self._seq),
                data=dict(spec.data),
                user_metadata=dict(spec.user_metadata or {}),
                max_attempts=spec.max_attempts or 1,
                traceparent=spec.traceparent,
                tracestate=spec.tracestate,
            )
            for spec in specs
        ]
        stage.tasks.extend(rows)
        self.tasks.update((row.id, row) for row in rows)
        return rows

    # ---- steering -----------------------------------------------------------------------

    def approve(self, stage_id: EntityId) -> None:
        stage = self.stage(stage_id)
        job = self.jobs[stage.job_id]
        if stage.status is StageStatus.PENDING:
            return
        if job.status.is_final or stage.status not in (StageStatus.WAITING, StageStatus.CREATED):
            raise illegal("STAGE", stage.status, StageStatus.PENDING)
        if stage.order > 1 and job.stages[stage.order - 2].status is not StageStatus.COMPLETED:
            raise refused("Previous stage is not COMPLETED", "ILLEGAL_STAGE_STATUS_TRANSITION")
        stage.status = StageStatus.PENDING
        if not stage.tasks:
            self._complete_stage(job, stage)

    def set_job_status(self, job_id: EntityId, target: JobStatus) -> None:
        job = self.job(job_id)
        if (job.status, target) not in _USER_JOB_MOVES:
            raise illegal("JOB", job.status, target)
        job.update_time = now()
        if target is JobStatus.ABORTED:
            job.status = JobStatus.ABORTED
            for stage in job.stages:
                for task in stage.tasks:
                    if not task.status.is_final:
                        task.status, task.end_time = TaskStatus.ABORTED, now()
                if not stage.status.is_final:
                    stage.status = StageStatus.ABORTED
        elif target is JobStatus.PAUSED:
            job.status = JobStatus.PAUSED
        else:
            job.status = self._implied_status(job)

    def _implied_status(self, job: JobRow) -> JobStatus:
        statuses = [st.status for st in job.stages]
        if StageStatus.FAILED in statuses:
            return JobStatus.FAILED
        if statuses and all(s is StageStatus.COMPLETED for s in statuses):
            return JobStatus.COMPLETED
        started = any(t.start_time is not None for st in job.stages for t in st.tasks)
        return JobStatus.IN_PROGRESS if started else JobStatus.PENDING

    def set_priority(self, job_id: EntityId, priority: Priority) -> bool:
        job = self.job(job_id)
        if job.priority is Priority(priority):
            return False
        job.priority, job.update_time = Priority(priority), now()
        return True

    def delete_job(self, job_id: EntityId) -> None:
        job = self.job(job_id)
        if not job.status.is_final:
            raise refused(
                f"Job is {job.status}; only a COMPLETED, FAILED or ABORTED job can be deleted",
                "JOB_NOT_IN_FINITE_STATE",
            )
        for stage in job.stages:
            for task in stage.tasks:
                del self.tasks[task.id]
            del self.stages[stage.id]
        del self.jobs[job.id]

    # ---- claims and reports -------------------------------------------------------------

    def claim(self, stage_type: str) -> TaskRow | None:
        ready = [
            task
            for task in self.tasks.values()
            if task.status in _CLAIMABLE_TASK
            and self.stages[task.stage_id].type == stage_type
            and self.stages[task.stage_id].status in _ACTIVE_STAGE
            and self.jobs[task.job_id].status in _CLAIMING_JOB
        ]
        if not ready:
            return None
        task = min(ready, key=lambda t: (PRIORITY_RANK[self.jobs[t.job_id].priority], t.seq))
        stamp = now()
        task.status, task.start_time, task.update_time = TaskStatus.IN_PROGRESS, stamp, stamp
        stage, job = self.stages[task.stage_id], self.jobs[task.job_id]
        if stage.status is StageStatus.PENDING:
            stage.status = StageStatus.IN_PROGRESS
        if job.status is JobStatus.PENDING:
            job.status, job.update_time = JobStatus.IN_PROGRESS, stamp
        return task

    def report(self, task_id: EntityId, reported: TaskStatus) -> TaskRow:
        task = self.task(task_id)
        if task.status is not TaskStatus.IN_PROGRESS:
            raise illegal("TASK", task.status, reported)
        stamp = now()
        task.update_time = stamp
        if reported is TaskStatus.COMPLETED:
            task.status, task.end_time = TaskStatus.COMPLETED, stamp
        else:
            task.attempts += 1
            if task.attempts < task.max_attempts:
                task.status = TaskStatus.RETRIED
            else:
                task.status, task.end_time = TaskStatus.FAILED, stamp
        self._settle(self.stages[task.stage_id])
        return task

    def _settle(self, stage: StageRow) -> None:
        if stage.status.is_final:
            return
        job = self.jobs[stage.job_id]
        summary = stage.summary()
        if summary.failed:
            stage.status = StageStatus.FAILED
            job.status, job.update_time = JobStatus.FAILED, now()
            for task in stage.tasks:
                if task.status in _CLAIMABLE_TASK:
                    task.status, task.end_time = TaskStatus.ABORTED, now()
        elif summary.total and summary.completed == summary.total:
            self._complete_stage(job, stage)

    def _complete_stage(self, job: JobRow, stage: StageRow) -> None:
        stage.status = StageStatus.COMPLETED
        while True:
            following = job.stages[stage.order] if stage.order < len(job.stages) else None
            if following is None:
                if job.status is not JobStatus.PAUSED:
                    job.status = JobStatus.COMPLETED
                break
            if following.status is not StageStatus.CREATED:
                break  # WAITING: it holds until approved
            following.status = StageStatus.PENDING
            if following.tasks:
                break
            following.status = StageStatus.COMPLETED
            stage = following
        job.update_time = now()
