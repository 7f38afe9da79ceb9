"""Consequences of a task or stage change: summaries, stage completion or failure, the
next stage's turn, and the job's status and percentage. All within the caller's
transaction, so a report and everything it implies commit together."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..db.models import STAGES, TASKS, Job, Stage, Task
from ..domain.announcements import stage_awaits_approval
from ..domain.moves import job_move, stage_move, task_move
from ..domain.progress import Turn, job_percentage, next_stage_turn, stage_outcome
from ..domain.statuses import CLAIMING_JOB_STATUSES, JobStatus, StageStatus, TaskStatus
from ..domain.summary import Summary, percentage, summary_field
from ..domain.transitions import Actor
from .claimability import close_tasks, open_tasks
from .history import move_stages, move_tasks, moved
from .loading import load_job

_CLAIMABLE = (TaskStatus.PENDING, TaskStatus.RETRIED)
_NON_FINAL_TASK = [s for s in TaskStatus if not s.is_final]
_NON_FINAL_STAGE = [s for s in StageStatus if not s.is_final]


async def bump_summary(
    s: AsyncSession, stage_id: uuid.UUID, moves: dict[TaskStatus, int], now: datetime
) -> Stage:
    """Apply count deltas to a stage's summary in one atomic UPDATE; returns the stage.

    Increments in SQL rather than read-modify-write, so concurrent claims and reports
    on the same stage serialise on the row without losing counts.
    """
    values: dict[str, object] = {"update_time": now}
    for status, delta in moves.items():
        if delta:
            field = summary_field(status)
            values[field] = STAGES.c[field] + delta
    stmt = (
        update(Stage)
        .where(Stage.id == stage_id)
        .values(**values)
        .returning(Stage)
        .execution_options(populate_existing=True)
    )
    stage = (await s.execute(stmt)).scalar_one()
    summary = Summary.of_columns(stage)
    stage.percentage = percentage(summary.completed, summary.total)
    return stage


async def recount(s: AsyncSession, stage_ids: list[uuid.UUID], now: datetime) -> None:
    """Rewrite the summaries of these stages from their tasks (after bulk changes)."""
    if not stage_ids:
        return
    rows = await s.execute(
        select(Task.stage_id, Task.status, func.count())
        .where(Task.stage_id.in_(stage_ids))
        .group_by(Task.stage_id, Task.status)
    )
    counts: dict[uuid.UUID, dict[TaskStatus, int]] = {sid: {} for sid in stage_ids}
    for stage_id, status, n in rows:
        counts[stage_id][status] = n
    for stage_id, by_status in counts.items():
        summary = Summary.of(by_status)
        await s.execute(
            update(Stage)
            .where(Stage.id == stage_id)
            .values(
                **summary.counts(),
                percentage=percentage(summary.completed, summary.total),
                update_time=now,
            )
            .execution_options(synchronize_session=False)
        )


async def open_stage_for_claims(
    s: AsyncSession, stage: Stage, job_status: JobStatus, now: datetime
) -> None:
    """Make the stage's waiting tasks claimable, if the job lets tasks be claimed."""
    if job_status in CLAIMING_JOB_STATUSES:
        await open_tasks(s, [TASKS.c.stage_id == stage.id], now)


async def job_stages(s: AsyncSession, job_id: uuid.UUID) -> list[Stage]:
    await s.flush()  # populate_existing must not overwrite unflushed changes
    stmt = (
        select(Stage)
        .where(Stage.job_id == job_id)
        .order_by(Stage.stage_order)
        .execution_options(populate_existing=True)
    )
    return list((await s.execute(stmt)).scalars())


async def move_stage(
    s: AsyncSession, stage: Stage, target: StageStatus, now: datetime, actor: Actor = Actor.SYSTEM
) -> None:
    await moved(s, stage, stage_move(stage.status, target, actor), now)


async def move_job(
    s: AsyncSession, job: Job, target: JobStatus, now: datetime, actor: Actor = Actor.SYSTEM
) -> None:
    await moved(s, job, job_move(job.status, target, actor), now)


async def settle_stage(s: AsyncSession, stage: Stage, now: datetime) -> None:
    """After a task of `stage` changed: complete or fail the stage if it is done."""
    if stage.status.is_final:
        return
    outcome = stage_outcome(Summary.of_columns(stage), stage.allowed_failures)
    if outcome is StageStatus.COMPLETED:
        job = await load_job(s, stage.job_id, lock=True)
        await complete_stage(s, job, stage, now)
    elif outcome is StageStatus.FAILED:
        job = await load_job(s, stage.job_id, lock=True)
        await fail_job_from(s, job, stage, now)


async def complete_stage(s: AsyncSession, job: Job, stage: Stage, now: datetime) -> None:
    """Complete `stage` and give the turn to the next one: activate it, complete it at
    once if it has no tasks, or leave it WAITING for approval. The job completes after
    its last stage; a paused job stays paused and completes when resumed."""
    stages = await job_stages(s, job.id)
    by_order = {st.stage_order: st for st in stages}
    current = stage
    if current.status is not StageStatus.COMPLETED:
        current.partial = Summary.of_columns(current).failed > 0  # failures it allowed
        await move_stage(s, current, StageStatus.COMPLETED, now)
    by_order[current.stage_order] = current
    while True:
        nxt = by_order.get(current.stage_order + 1)
        turn = next_stage_turn(
            nxt.status if nxt else None, Summary.of_columns(nxt).open if nxt else 0
        )
        if turn is Turn.ACTIVATE:
            assert nxt is not None
            await move_stage(s, nxt, StageStatus.PENDING, now)
            await open_stage_for_claims(s, nxt, job.status, now)
            break
        if turn is Turn.COMPLETE_EMPTY:
            assert nxt is not None
            await move_stage(s, nxt, StageStatus.PENDING, now)
            await move_stage(s, nxt, StageStatus.COMPLETED, now)
            current = nxt
            continue
        if turn is Turn.HOLD:
            assert nxt is not None
            stage_awaits_approval(
                s.info, job_id=job.id, stage_id=nxt.id, stage_type=nxt.type, now=now
            )
        if turn is Turn.JOB_DONE and job.status is not JobStatus.PAUSED:
            job.partial = any(st.partial for st in by_order.values())
            await move_job(s, job, JobStatus.COMPLETED, now)
        break
    job.percentage = job_percentage([st.status for st in by_order.values()])
    job.update_time = now


async def fail_job_from(s: AsyncSession, job: Job, stage: Stage, now: datetime) -> None:
    """A task failed for good: its stage and its job fail.

    The stage's tasks that have not started are aborted; running ones may still report.
    Later stages keep their status (as the reference does) but, the job being final,
    none of their tasks can be claimed.
    """
    failed = (
        await s.execute(
            select(Task.id, Task.reason)
            .where(Task.stage_id == stage.id, Task.status == TaskStatus.FAILED)
            .order_by(Task.end_time.desc(), Task.seq.desc())
            .limit(1)
        )
    ).first()
    reason = (failed.reason if failed else None) or SystemReason.TASK_FAILED
    stage.reason = job.reason = reason
    job.failed_stage_id = stage.id
    job.failed_task_id = failed.id if failed else None
    await move_stage(s, stage, StageStatus.FAILED, now)
    await move_job(s, job, JobStatus.FAILED, now)
    await s.flush()
    await close_job_for_claims(s, job.id)
    await move_tasks(
        s,
        [Task.stage_id == stage.id],
        [task_move(source, TaskStatus.ABORTED) for source in _CLAIMABLE],
        now,
        reason=SystemReason.STAGE_FAILED,
        not_before=None,
    )
    await recount(s, [stage.id], now)


async def close_job_for_claims(s: AsyncSession, job_id: uuid.UUID) -> None:
    await close_tasks(s, [TASKS.c.job_id == job_id])


async def abort_unfinished(
    s: AsyncSession, job_id: uuid.UUID, now: datetime, reason: str = SystemReason.JOB_ABORTED
) -> None:
    """Every non-final task and stage of the job becomes ABORTED; none stays claimable."""
    await s.flush()
    aborted = await move_tasks(
        s,
        [Task.job_id == job_id],
        [task_move(source, TaskStatus.ABORTED) for source in _NON_FINAL_TASK],
        now,
        reason=reason,
        not_before=None,
    )
    stages = [stage_move(source, StageStatus.ABORTED) for source in _NON_FINAL_STAGE]
    await move_stages(s, job_id, stages, now, reason=reason)
    await recount(s, sorted({m.stage_id for m in aborted}), now)
