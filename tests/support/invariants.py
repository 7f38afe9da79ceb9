"""Checks of DESIGN.md's invariants straight against the database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, false, func, literal, or_, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Stage, Task, Workflow, WorkflowEvent
from jobnik_manager.domain.statuses import (
    CLAIMING_JOB_STATUSES,
    JobStatus,
    StageStatus,
    TaskStatus,
)
from jobnik_manager.domain.workflows import ENDED, STARTED

SUMMARY_COLUMNS = {
    TaskStatus.PENDING: "pending",
    TaskStatus.IN_PROGRESS: "in_progress",
    TaskStatus.COMPLETED: "completed",
    TaskStatus.FAILED: "failed",
    TaskStatus.CREATED: "created",
    TaskStatus.RETRIED: "retried",
    TaskStatus.ABORTED: "aborted",
}


async def assert_invariants_at(database_url: str) -> None:
    """`assert_invariants` on the database at `database_url`, on an engine of its own."""
    db = Database(database_url)
    try:
        await assert_invariants(db)
    finally:
        await db.dispose()


async def assert_invariants(db: Database) -> None:
    """Summaries and running progress equal a recount; the claimable flag agrees with
    task, stage and job statuses; final jobs hold no claimable task; completed jobs have
    only completed stages, and tasks completed or cancelled; jobs and stages carry an
    end time exactly when final, a start time once running, and a failed job its reason
    and the stage that failed it; a workflow's start and end are each told once, as its
    marks say; no event or task outlives its job (PostgreSQL holds neither to it by a
    foreign key)."""
    async with db.sessions() as s:
        stages = {st.id: st for st in (await s.execute(select(Stage))).scalars()}
        jobs = {j.id: j for j in (await s.execute(select(Job))).scalars()}
        counts: dict[tuple[object, str], int] = {}
        for stage_id, status, n in await s.execute(
            select(Task.stage_id, Task.status, func.count()).group_by(Task.stage_id, Task.status)
        ):
            counts[(stage_id, status)] = n
        running: dict[object, int] = {}
        for stage_id, total in await s.execute(
            select(Task.stage_id, func.coalesce(func.sum(Task.progress), 0))
            .where(Task.status == TaskStatus.IN_PROGRESS)
            .group_by(Task.stage_id)
        ):
            running[stage_id] = total
        for st in stages.values():
            assert st.running_progress == running.get(st.id, 0), (
                f"stage {st.id} running_progress={st.running_progress} "
                f"but its running tasks' progress sums to {running.get(st.id, 0)}"
            )
            for status, column in SUMMARY_COLUMNS.items():
                assert getattr(st, column) == counts.get((st.id, status), 0), (
                    f"stage {st.id} summary {column}={getattr(st, column)} "
                    f"but recount={counts.get((st.id, status), 0)}"
                )
        # Per task, in the database: a history of millions of tasks never becomes rows
        # in Python. Only a task that breaks a rule comes back, the first found.
        broken = (await s.execute(_broken_tasks(stages, jobs).limit(1))).first()
        if broken is not None:
            task_id, status, claimable, reason = broken
            raise AssertionError(f"task {task_id} {status} claimable={claimable}: {reason}")
        stages_of: dict[Any, list[Any]] = {}
        for st in stages.values():
            stages_of.setdefault(st.job_id, []).append(st)
        for job in jobs.values():
            if JobStatus(job.status) is JobStatus.COMPLETED:
                assert all(st.status == StageStatus.COMPLETED for st in stages_of.get(job.id, []))
                assert job.percentage == 100
        for row in [*jobs.values(), *stages.values()]:
            final = row.status.is_final
            assert (row.end_time is not None) == final, f"{row.id} {row.status} ended?"
            if row.status == "IN_PROGRESS":
                assert row.start_time is not None, f"{row.id} runs without a start time"
            if row.start_time is not None and row.end_time is not None:
                assert row.start_time <= row.end_time
        for st in stages.values():
            assert st.failed <= st.allowed_failures or st.status is not StageStatus.COMPLETED
            assert st.partial == (st.status is StageStatus.COMPLETED and st.failed > 0)
        for job in jobs.values():
            done_stages = stages_of.get(job.id, [])
            assert job.partial == (
                job.status is JobStatus.COMPLETED and any(st.partial for st in done_stages)
            ), f"job {job.id} partial={job.partial}"
            if job.status is JobStatus.FAILED:
                assert job.reason, f"job {job.id} failed, and says not why"
                if job.failed_stage_id is not None:  # a failure, not a deadline
                    assert stages[job.failed_stage_id].status is StageStatus.FAILED
        await _assert_workflows_told(s)
        for model in (Event, Task):
            gone = ~select(Job.id).where(Job.id == model.job_id).exists()
            orphan = (await s.execute(select(model.job_id).where(gone).limit(1))).first()
            assert orphan is None, f"{model.__tablename__} of job {orphan[0]}, which is gone"


async def _assert_workflows_told(s: Any) -> None:
    """Each workflow's start told once when it is marked started, its end once (as one of
    the ending types) when marked ended, and nothing else."""
    told: dict[object, list[str]] = {}
    for workflow_id, kind in await s.execute(
        select(WorkflowEvent.workflow_id, WorkflowEvent.type).order_by(WorkflowEvent.seq)
    ):
        told.setdefault(workflow_id, []).append(kind)
    marks = await s.execute(select(Workflow.id, Workflow.started_at, Workflow.ended_at))
    for workflow_id, started_at, ended_at in marks:
        kinds = told.pop(workflow_id, [])
        end = next((k for k in kinds if k in ENDED.values()), None)
        expected = [STARTED] * (started_at is not None) + [end] * (ended_at is not None)
        assert kinds == expected and (end is None) == (ended_at is None), (
            f"workflow {workflow_id} told {kinds} (started {started_at}, ended {ended_at})"
        )
    assert not told, f"events of workflows not there: {sorted(map(str, told))}"


def _broken_tasks(
    stages: dict[object, Stage], jobs: dict[object, Job]
) -> Select[tuple[object, ...]]:
    """The tasks whose `claimable` flag disagrees with their task, stage and job statuses,
    whose stage type is not their stage's, or that are unfinished in a completed job,
    each with the rule it breaks."""
    active = [st.id for st in stages.values() if StageStatus(st.status).is_active]
    claiming = [j.id for j in jobs.values() if JobStatus(j.status) in CLAIMING_JOB_STATUSES]
    done = [j.id for j in jobs.values() if JobStatus(j.status) is JobStatus.COMPLETED]
    partial = [st.id for st in stages.values() if st.partial]
    claimable_statuses = [status for status in TaskStatus if status.is_claimable]
    should_claim = and_(
        Task.status.in_(claimable_statuses),
        Task.not_before.is_(None),  # a retry waiting out its delay
        Task.stage_id.in_(active) if active else false(),
        Task.job_id.in_(claiming) if claiming else false(),
    )
    # Done, or cancelled on its own (which counts as neither done nor failed), or failed
    # within its stage's allowance (the stage and job are partial).
    finished: ColumnElement[bool] = Task.status.in_((TaskStatus.COMPLETED, TaskStatus.ABORTED))
    if partial:
        finished = or_(finished, and_(Task.status == TaskStatus.FAILED, Task.stage_id.in_(partial)))
    unfinished_in_done = and_(Task.job_id.in_(done), ~finished) if done else false()
    wrong_flag = Task.claimable != should_claim
    wrong_type = (
        Task.stage_type != select(Stage.type).where(Stage.id == Task.stage_id).scalar_subquery()
    )
    reason = case(
        (wrong_flag, literal("claimable flag")),
        (wrong_type, literal("stage type is not its stage's")),
        else_=literal("unfinished in a completed job"),
    )
    return select(Task.id, Task.status, Task.claimable, reason).where(
        or_(wrong_flag, wrong_type, unfinished_in_done)
    )
