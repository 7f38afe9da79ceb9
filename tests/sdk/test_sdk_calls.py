"""Every producer and consumer call, against the manager (SQLite and PostgreSQL, through
the SDK in-process) and against the FakeJobnik, with the same expectations."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from jobnik_sdk import (
    ApiError,
    IllegalTransitionError,
    Job,
    JobnikValidationError,
    JobStatus,
    NewStage,
    NewTask,
    NotFoundError,
    Priority,
    StageStatus,
    TaskStatus,
    WaitTimeoutError,
)

from ..support.api import unique
from .conftest import Surface


async def test_create_job_with_stages_and_tasks_in_one_call(surface: Surface) -> None:
    prepare, publish = unique("prepare"), unique("publish")
    job = await surface.create_job(
        unique("job"),
        {"area": "north"},
        priority=Priority.HIGH,
        user_metadata={"owner": "maps"},
        stages=[
            NewStage(type=prepare, data={"s": 1}, tasks=[NewTask(data={"i": 0}), NewTask()]),
            NewStage(
                type=publish,
                start_as_waiting=True,
                tasks=[NewTask(data={"target": "cdn"}, max_attempts=3)],
            ),
        ],
    )
    assert job.status is JobStatus.PENDING
    assert job.priority is Priority.HIGH
    assert job.user_metadata == {"owner": "maps"}
    assert job.data == {"area": "north"}
    assert job.stages is not None
    first, second = job.stages
    assert (first.type, first.order, first.status) == (prepare, 1, StageStatus.PENDING)
    assert (second.type, second.order, second.status) == (publish, 2, StageStatus.WAITING)
    assert first.summary.pending == first.summary.total == 2
    assert first.tasks is not None and [t.data for t in first.tasks] == [{"i": 0}, {}]
    assert second.tasks is not None and second.tasks[0].max_attempts == 3
    assert first.tasks[0].max_attempts == 1

    fetched = await surface.get_job(job.id, with_stages=True)
    assert fetched.stages is not None and [s.id for s in fetched.stages] == [first.id, second.id]
    assert (await surface.get_job(job.id)).stages is None

    stages = await surface.get_job_stages(job.id, with_tasks=True)
    assert [s.id for s in stages] == [first.id, second.id]
    assert stages[0].tasks is not None and len(stages[0].tasks) == 2

    stage = await surface.get_stage(first.id, with_tasks=True)
    assert stage.job_id == job.id and stage.tasks is not None and len(stage.tasks) == 2
    summary = await surface.get_summary(first.id)
    assert (summary.pending, summary.total, summary.aborted) == (2, 2, 0)
    task = await surface.get_task(first.tasks[0].id)
    assert task.stage_id == first.id and task.status is TaskStatus.PENDING


async def test_add_stage_waiting_with_tasks_and_add_tasks(surface: Surface) -> None:
    job = await surface.create_job(unique("job"))
    assert job.stages is None
    first = await surface.add_stage(job.id, unique("a"), {"k": 1})
    assert first.status is StageStatus.PENDING and first.order == 1 and first.tasks is None
    later = await surface.add_stage(job.id, unique("b"))
    assert later.status is StageStatus.CREATED and later.order == 2
    waiting = await surface.add_stage(
        job.id, unique("c"), start_as_waiting=True, tasks=[NewTask(data={"n": 1})]
    )
    assert waiting.status is StageStatus.WAITING and waiting.order == 3
    assert waiting.tasks is not None and waiting.summary.total == 1

    added = await surface.add_tasks(first.id, [NewTask(data={"n": i}) for i in range(3)])
    assert [t.data for t in added] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert all(t.status is TaskStatus.PENDING and t.stage_id == first.id for t in added)
    await surface.add_tasks(later.id, [NewTask()])
    await surface.add_tasks(waiting.id, [NewTask()])
    assert (await surface.get_summary(waiting.id)).total == 2

    claimed = await surface.dequeue(first.type)
    assert claimed is not None
    with pytest.raises(ApiError) as refused:
        await surface.add_tasks(first.id, [NewTask()])
    assert refused.value.code == "NOT_ALLOWED_TO_ADD_TASKS_TO_IN_PROGRESS_STAGE"


async def test_claim_complete_and_fail_with_retries(surface: Surface) -> None:
    kind = unique("work")
    job = await surface.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=[NewTask(data={"n": 1}, max_attempts=2), NewTask()])],
    )
    assert await surface.dequeue(unique("nothing")) is None

    first = await surface.dequeue(kind)
    assert first is not None and first.status is TaskStatus.IN_PROGRESS
    assert first.data == {"n": 1} and first.start_time is not None
    assert (await surface.get_job(job.id)).status is JobStatus.IN_PROGRESS

    retried = await surface.fail(first.id)
    assert (retried.status, retried.attempts) == (TaskStatus.RETRIED, 1)
    again = await surface.dequeue(kind)
    assert again is not None and again.id == first.id  # the oldest claimable task first
    assert (again.status, again.attempts) == (TaskStatus.IN_PROGRESS, 1)
    failed = await surface.fail(again.id)
    assert (failed.status, failed.attempts) == (TaskStatus.FAILED, 2)
    assert failed.end_time is not None
    assert await surface.dequeue(kind) is None  # the failed stage's other task is aborted

    final = await surface.get_job(job.id, with_stages=True)
    assert final.status is JobStatus.FAILED
    assert final.stages is not None and final.stages[0].status is StageStatus.FAILED
    summary = final.stages[0].summary
    assert (summary.failed, summary.aborted, summary.total) == (1, 1, 2)


async def test_complete_finishes_stage_and_job(surface: Surface) -> None:
    kind = unique("work")
    job = await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])])
    task = await surface.dequeue(kind)
    assert task is not None
    done = await surface.complete(task.id)
    assert done.status is TaskStatus.COMPLETED and done.end_time is not None
    final = await surface.get_job(job.id)
    assert (final.status, final.percentage) == (JobStatus.COMPLETED, 100)


async def test_report_rules(surface: Surface) -> None:
    kind = unique("work")
    job = await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])])
    assert job.stages is not None and job.stages[0].tasks is not None
    pending = job.stages[0].tasks[0]
    with pytest.raises(IllegalTransitionError) as illegal:
        await surface.complete(pending.id)
    assert illegal.value.code == "ILLEGAL_TASK_STATUS_TRANSITION"
    assert illegal.value.status_code == 400
    with pytest.raises(NotFoundError) as missing:
        await surface.fail(uuid.uuid4())
    assert (missing.value.status_code, missing.value.code) == (404, "TASK_NOT_FOUND")


async def test_stage_order_and_approval(surface: Surface) -> None:
    one, two, three = unique("one"), unique("two"), unique("three")
    job = await surface.create_job(
        unique("job"),
        stages=[
            NewStage(type=one, tasks=[NewTask()]),
            NewStage(type=two, start_as_waiting=True, tasks=[NewTask(), NewTask()]),
            NewStage(type=three, tasks=[NewTask()]),
        ],
    )
    assert job.stages is not None
    waiting = job.stages[1]
    assert await surface.dequeue(three) is None
    with pytest.raises(IllegalTransitionError):
        await surface.approve_stage(waiting.id)  # its predecessor has not completed

    await _run_all(surface, one)
    after_one = await surface.get_job(job.id, with_stages=True)
    assert after_one.percentage == 33 and after_one.status is JobStatus.IN_PROGRESS
    assert after_one.stages is not None
    assert [s.status for s in after_one.stages] == [
        StageStatus.COMPLETED,
        StageStatus.WAITING,
        StageStatus.CREATED,
    ]
    assert await surface.dequeue(two) is None

    await surface.approve_stage(waiting.id)
    await surface.approve_stage(waiting.id)  # PENDING again is a no-op
    await _run_all(surface, two)
    assert (await surface.get_stage(job.stages[2].id)).status is StageStatus.PENDING
    await _run_all(surface, three)
    done = await surface.get_job(job.id, with_stages=True)
    assert (done.status, done.percentage) == (JobStatus.COMPLETED, 100)
    assert done.stages is not None
    assert [(s.summary.completed, s.summary.total, s.percentage) for s in done.stages] == [
        (1, 1, 100),
        (2, 2, 100),
        (1, 1, 100),
    ]


async def test_pause_resume_and_abort(surface: Surface) -> None:
    kind = unique("work")
    job = await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[NewTask(), NewTask(), NewTask()])]
    )
    running = await surface.dequeue(kind)
    assert running is not None
    await surface.pause(job.id)
    assert (await surface.get_job(job.id)).status is JobStatus.PAUSED
    assert await surface.dequeue(kind) is None
    await surface.complete(running.id)  # a task finishing while paused is recorded
    with pytest.raises(IllegalTransitionError):
        await surface.pause(job.id)

    await surface.resume(job.id)
    assert (await surface.get_job(job.id)).status is JobStatus.IN_PROGRESS
    assert await surface.dequeue(kind) is not None

    await surface.abort(job.id)
    aborted = await surface.get_job(job.id, with_stages=True)
    assert aborted.status is JobStatus.ABORTED
    assert aborted.stages is not None and aborted.stages[0].status is StageStatus.ABORTED
    summary = aborted.stages[0].summary
    assert (summary.completed, summary.aborted, summary.total) == (1, 2, 3)
    assert await surface.dequeue(kind) is None
    with pytest.raises(IllegalTransitionError) as illegal:
        await surface.abort(job.id)
    assert illegal.value.code == "ILLEGAL_JOB_STATUS_TRANSITION"
    assert "from ABORTED to ABORTED" in illegal.value.message


async def test_resume_of_a_running_job_is_illegal(surface: Surface) -> None:
    job = await surface.create_job(unique("job"))
    with pytest.raises(IllegalTransitionError):
        await surface.resume(job.id)


async def test_priority_orders_claims(surface: Surface) -> None:
    kind = unique("work")
    low = await surface.create_job(
        unique("low"), priority=Priority.LOW, stages=[NewStage(type=kind, tasks=[NewTask()])]
    )
    high = await surface.create_job(unique("high"), stages=[NewStage(type=kind, tasks=[NewTask()])])
    assert await surface.set_priority(high.id, Priority.VERY_HIGH) is True
    assert await surface.set_priority(high.id, Priority.VERY_HIGH) is False
    assert (await surface.get_job(high.id)).priority is Priority.VERY_HIGH
    first = await surface.dequeue(kind)
    assert high.stages is not None and high.stages[0].tasks is not None
    assert first is not None and first.id == high.stages[0].tasks[0].id
    assert await surface.set_priority(low.id, Priority.HIGH) is True


async def test_user_metadata_is_replaced(surface: Surface) -> None:
    job = await surface.create_job(
        unique("job"),
        user_metadata={"a": 1},
        stages=[NewStage(type=unique("k"), tasks=[NewTask()])],
    )
    assert job.stages is not None and job.stages[0].tasks is not None
    stage, task = job.stages[0], job.stages[0].tasks[0]
    await surface.set_job_user_metadata(job.id, {"b": [1, 2]})
    await surface.set_stage_user_metadata(stage.id, {"c": {"d": True}})
    await surface.set_task_user_metadata(task.id, {"progress": 50})
    assert (await surface.get_job(job.id)).user_metadata == {"b": [1, 2]}
    assert (await surface.get_stage(stage.id)).user_metadata == {"c": {"d": True}}
    assert (await surface.get_task(task.id)).user_metadata == {"progress": 50}


async def test_delete_job_only_when_final(surface: Surface) -> None:
    job = await surface.create_job(unique("job"), stages=[NewStage(type=unique("k"))])
    with pytest.raises(ApiError) as refused:
        await surface.delete_job(job.id)
    assert (refused.value.status_code, refused.value.code) == (400, "JOB_NOT_IN_FINITE_STATE")
    await surface.abort(job.id)
    await surface.delete_job(job.id)
    with pytest.raises(NotFoundError) as gone:
        await surface.get_job(job.id)
    assert gone.value.code == "JOB_NOT_FOUND"
    assert job.stages is not None
    with pytest.raises(NotFoundError) as stage_gone:
        await surface.get_stage(job.stages[0].id)
    assert stage_gone.value.code == "STAGE_NOT_FOUND"


async def test_lists_filters_pages_and_iterators(surface: Surface) -> None:
    name, kind = unique("batch"), unique("work")
    jobs = [
        await surface.create_job(
            name,
            priority=Priority.LOW if i == 0 else Priority.MEDIUM,
            stages=[NewStage(type=kind, tasks=[NewTask(data={"i": i}) for i in range(3)])],
        )
        for i in range(3)
    ]
    page = await surface.list_jobs(name=name, page_size=2)
    assert page.total == 3 and [j.id for j in page.items] == [j.id for j in jobs[:2]]
    page_two = await surface.list_jobs(name=name, page=2, page_size=2)
    assert [j.id for j in page_two.items] == [jobs[2].id]
    low = await surface.list_jobs(name=name, priority=Priority.LOW)
    assert [j.id for j in low.items] == [jobs[0].id]
    with_stages = await surface.list_jobs(name=name, with_stages=True, page_size=1)
    assert with_stages.items[0].stages is not None
    assert [j.id async for j in surface.iter_jobs(name=name, page_size=2)] == [j.id for j in jobs]

    stages = await surface.list_stages(stage_type=kind, page_size=100)
    assert stages.total == 3
    one = await surface.list_stages(job_id=jobs[1].id, with_tasks=True)
    assert one.total == 1 and one.items[0].tasks is not None and len(one.items[0].tasks) == 3
    assert len([s async for s in surface.iter_stages(stage_type=kind, page_size=1)]) == 3

    claimed = await surface.dequeue(kind)
    assert claimed is not None
    tasks = await surface.list_tasks(stage_type=kind, page_size=4)
    assert tasks.total == 9 and len(tasks.items) == 4
    running = await surface.list_tasks(stage_type=kind, status=TaskStatus.IN_PROGRESS)
    assert [t.id for t in running.items] == [claimed.id]
    of_stage = await surface.list_tasks(stage_id=claimed.stage_id)
    assert of_stage.total == 3
    everything = [t async for t in surface.iter_tasks(stage_type=kind, page_size=2)]
    assert len({t.id for t in everything}) == 9


async def test_wait_reports_progress_until_final(surface: Surface) -> None:
    one, two = unique("one"), unique("two")
    job = await surface.create_job(
        unique("job"),
        stages=[NewStage(type=one, tasks=[NewTask()]), NewStage(type=two, tasks=[NewTask()])],
    )
    seen: list[tuple[JobStatus, int]] = []

    async def on_progress(current: Job) -> None:
        seen.append((current.status, current.percentage))

    async def work() -> None:
        for kind in (one, two):
            await asyncio.sleep(0.05)
            await _run_all(surface, kind)

    worker = asyncio.create_task(work())
    done = await surface.wait(
        job.id,
        poll_interval=timedelta(milliseconds=10),
        timeout=timedelta(seconds=10),
        on_progress=on_progress,
    )
    await worker
    assert done.status is JobStatus.COMPLETED
    assert seen[0] == (JobStatus.PENDING, 0)
    assert seen[-1] == (JobStatus.COMPLETED, 100)
    assert (JobStatus.IN_PROGRESS, 50) in seen
    assert len(seen) == len(set(seen)), "on_progress runs only on a change"


async def test_wait_times_out(surface: Surface) -> None:
    job = await surface.create_job(unique("job"), stages=[NewStage(type=unique("k"))])
    with pytest.raises(WaitTimeoutError) as timed_out:
        await surface.wait(
            job.id, poll_interval=timedelta(milliseconds=10), timeout=timedelta(milliseconds=50)
        )
    assert isinstance(timed_out.value, TimeoutError)
    assert "PENDING" in str(timed_out.value)


async def test_lookup_errors(surface: Surface) -> None:
    with pytest.raises(NotFoundError) as job:
        await surface.get_job(uuid.uuid4())
    assert (job.value.status_code, job.value.code) == (404, "JOB_NOT_FOUND")
    with pytest.raises(NotFoundError) as stage:
        await surface.get_stage(uuid.uuid4())
    assert stage.value.code == "STAGE_NOT_FOUND"
    with pytest.raises(NotFoundError) as task:
        await surface.get_task(uuid.uuid4())
    assert task.value.code == "TASK_NOT_FOUND"
    with pytest.raises(JobnikValidationError) as bad_id:
        await surface.get_job("not-a-uuid")
    assert (bad_id.value.status_code, bad_id.value.code) == (400, "VALIDATION_ERROR")
    with pytest.raises(JobnikValidationError):
        await surface.create_job("x")  # names are 2 to 50 characters
    with pytest.raises(NotFoundError):
        await surface.add_stage(uuid.uuid4(), "kind")


async def _run_all(surface: Surface, stage_type: str) -> None:
    while (task := await surface.dequeue(stage_type)) is not None:
        await surface.complete(task.id)
