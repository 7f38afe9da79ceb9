"""Checks of DESIGN.md's invariants straight against the database."""

from __future__ import annotations

from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Job, Stage, Task
from jobnik_manager.domain.statuses import (
    CLAIMING_JOB_STATUSES,
    JobStatus,
    StageStatus,
    TaskStatus,
)

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
    and the stage that failed it."""
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
        for task in (await s.execute(select(Task))).scalars():
            st, job = stages[task.stage_id], jobs[task.job_id]
            should = (
                TaskStatus(task.status).is_claimable
                and task.not_before is None  # a retry waiting out its delay
                and StageStatus(st.status).is_active
                and JobStatus(job.status) in CLAIMING_JOB_STATUSES
            )
            assert task.claimable == should, f"task {task.id} claimable={task.claimable}"
            assert task.stage_type == st.type
            if JobStatus(job.status) is JobStatus.COMPLETED:
                # Done, or cancelled on its own (which counts as neither done nor failed),
                # or failed within its stage's allowance (the stage and job are partial).
                allowed = (TaskStatus.COMPLETED, TaskStatus.ABORTED)
                if st.partial:
                    allowed += (TaskStatus.FAILED,)
                assert task.status in allowed, f"task {task.id} {task.status} in a done job"
        for job in jobs.values():
            if JobStatus(job.status) is JobStatus.COMPLETED:
                assert all(
                    st.status == StageStatus.COMPLETED
                    for st in stages.values()
                    if st.job_id == job.id
                )
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
            done_stages = [st for st in stages.values() if st.job_id == job.id]
            assert job.partial == (
                job.status is JobStatus.COMPLETED and any(st.partial for st in done_stages)
            ), f"job {job.id} partial={job.partial}"
            if job.status is JobStatus.FAILED:
                assert job.reason, f"job {job.id} failed, and says not why"
                if job.failed_stage_id is not None:  # a failure, not a deadline
                    assert stages[job.failed_stage_id].status is StageStatus.FAILED
