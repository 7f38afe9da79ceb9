"""The behaviours the reference's own end-to-end suite checks, on both backends."""

from __future__ import annotations

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

ZERO = {"pending": 0, "inProgress": 0, "completed": 0, "failed": 0, "created": 0, "retried": 0}


def summary(**counts: int) -> dict[str, int]:
    s = {**ZERO, "aborted": 0, **counts}
    s["total"] = sum(v for k, v in s.items() if k != "total")
    return s


async def test_two_stage_job_runs_to_completion_with_summaries(api: Api, db: Database) -> None:
    job = await api.create_job()
    assert job["status"] == "PENDING" and job["percentage"] == 0
    s1 = await api.create_stage(job["id"])
    t1 = (await api.create_tasks(s1["id"]))[0]
    s2 = await api.create_stage(job["id"])
    await api.create_tasks(s2["id"])
    assert s1["status"] == "PENDING" and s2["status"] == "CREATED"
    for st in (s1, s2):
        got = await api.call("GET", f"/v1/stages/{st['id']}/summary")
        assert got == summary(pending=1)

    claimed = await api.dequeue(s1["type"])
    assert claimed is not None and claimed["id"] == t1["id"]
    assert claimed["status"] == "IN_PROGRESS" and "startTime" in claimed
    stage = await api.stage(s1["id"])
    assert stage["status"] == "IN_PROGRESS" and stage["summary"] == summary(inProgress=1)
    got_job = await api.job(job["id"])
    assert (got_job["status"], got_job["percentage"]) == ("IN_PROGRESS", 0)

    done = await api.report(t1["id"], "COMPLETED")
    assert done["status"] == "COMPLETED" and "endTime" in done
    stage = await api.stage(s1["id"])
    assert stage["status"] == "COMPLETED" and stage["percentage"] == 100
    assert stage["summary"] == summary(completed=1)
    assert (await api.stage(s2["id"]))["status"] == "PENDING"
    got_job = await api.job(job["id"])
    assert (got_job["status"], got_job["percentage"]) == ("IN_PROGRESS", 50)

    await api.run_one(s2["type"])
    stage = await api.stage(s2["id"])
    assert (stage["status"], stage["percentage"]) == ("COMPLETED", 100)
    assert stage["summary"] == summary(completed=1)
    got_job = await api.job(job["id"])
    assert (got_job["status"], got_job["percentage"]) == ("COMPLETED", 100)
    await assert_invariants(db)


async def test_abort_running_job_stops_dequeue_and_cascades(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    tasks = await api.create_tasks(stage["id"], 2)
    later = await api.create_stage(job["id"])
    await api.create_tasks(later["id"])
    running = await api.dequeue(stage["type"])
    assert running is not None
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"

    answer = await api.set_job_status(job["id"], "ABORTED")
    assert answer == {"code": "JOB_MODIFIED_SUCCESSFULLY"}
    assert (await api.job(job["id"]))["status"] == "ABORTED"
    assert await api.dequeue(stage["type"]) is None
    assert await api.dequeue(later["type"]) is None
    for st in (stage, later):
        assert (await api.stage(st["id"]))["status"] == "ABORTED"
    for t in tasks:
        assert (await api.task(t["id"]))["status"] == "ABORTED"
    assert (await api.stage(stage["id"]))["summary"] == summary(aborted=2)
    # The worker that held the task can no longer settle it.
    err = await api.report(running["id"], "COMPLETED", expect=400)
    assert err["code"] == "ILLEGAL_TASK_STATUS_TRANSITION"
    await assert_invariants(db)


async def test_abort_of_completed_job_is_an_illegal_transition(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    await api.create_tasks(stage["id"])
    await api.run_one(stage["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    err = await api.set_job_status(job["id"], "ABORTED", expect=400)
    assert err == {
        "message": "Illegal status transition from COMPLETED to ABORTED",
        "code": "ILLEGAL_JOB_STATUS_TRANSITION",
    }


async def test_pause_blocks_dequeue_until_resumed(api: Api, db: Database) -> None:
    job = await api.create_job()
    await api.set_job_status(job["id"], "PAUSED")
    stage = await api.create_stage(job["id"])
    assert await api.approve(stage["id"]) == {"code": "STAGE_MODIFIED_SUCCESSFULLY"}  # no-op
    await api.create_tasks(stage["id"])
    assert await api.dequeue(stage["type"]) is None
    await assert_invariants(db)
    await api.set_job_status(job["id"], "PENDING")
    assert (await api.job(job["id"]))["status"] == "PENDING"
    assert await api.dequeue(stage["type"]) is not None
    await assert_invariants(db)


async def test_pause_never_strands_a_running_task(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    await api.create_tasks(stage["id"], 2)
    first = await api.dequeue(stage["type"])
    assert first is not None
    await api.set_job_status(job["id"], "PAUSED")
    # The running task finishes while paused and is recorded; nothing else is offered.
    assert (await api.report(first["id"], "COMPLETED"))["status"] == "COMPLETED"
    assert await api.dequeue(stage["type"]) is None
    assert (await api.stage(stage["id"]))["summary"] == summary(completed=1, pending=1)
    await api.set_job_status(job["id"], "PENDING")
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"
    await api.run_one(stage["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)


async def test_job_whose_last_task_finishes_while_paused_completes_on_resume(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    await api.create_tasks(stage["id"])
    task = await api.dequeue(stage["type"])
    assert task is not None
    await api.set_job_status(job["id"], "PAUSED")
    await api.report(task["id"], "COMPLETED")
    got = await api.job(job["id"])
    assert (got["status"], got["percentage"]) == ("PAUSED", 100)
    await api.set_job_status(job["id"], "PENDING")
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_resume_of_a_job_that_is_not_paused_is_illegal(api: Api) -> None:
    job = await api.create_job()
    err = await api.set_job_status(job["id"], "PENDING", expect=400)
    assert err["code"] == "ILLEGAL_JOB_STATUS_TRANSITION"
    assert err["message"] == "Illegal status transition from PENDING to PENDING"


async def test_dequeue_follows_priority_across_jobs_sharing_a_stage_type(api: Api) -> None:
    stage_type = unique("priority")
    by_task: dict[str, str] = {}
    for priority in ("LOW", "VERY_LOW", "MEDIUM", "VERY_HIGH", "HIGH"):
        job = await api.create_job(priority)
        assert job["priority"] == priority
        stage = await api.create_stage(job["id"], stage_type)
        by_task[(await api.create_tasks(stage["id"]))[0]["id"]] = priority
    order = []
    for _ in range(5):
        task = await api.dequeue(stage_type)
        assert task is not None
        order.append(by_task[task["id"]])
    assert order == ["VERY_HIGH", "HIGH", "MEDIUM", "LOW", "VERY_LOW"]
    assert await api.dequeue(stage_type) is None


async def test_equal_priority_is_served_oldest_first(api: Api) -> None:
    stage_type = unique("fifo")
    created = []
    for _ in range(3):
        job = await api.create_job("HIGH")
        stage = await api.create_stage(job["id"], stage_type)
        created += [t["id"] for t in await api.create_tasks(stage["id"], 2)]
    claimed = [(await api.dequeue(stage_type) or {}).get("id") for _ in created]
    assert claimed == created


async def test_priority_change_reorders_waiting_tasks(api: Api) -> None:
    stage_type = unique("reprio")
    low = await api.create_job("LOW")
    high = await api.create_job("HIGH")
    for job in (high, low):
        await api.create_tasks((await api.create_stage(job["id"], stage_type))["id"])
    patched = await api.http.patch(f"/v1/jobs/{low['id']}/priority", json={"priority": "VERY_HIGH"})
    assert patched.status_code == 200 and patched.json() == {"code": "JOB_MODIFIED_SUCCESSFULLY"}
    same = await api.http.patch(f"/v1/jobs/{low['id']}/priority", json={"priority": "VERY_HIGH"})
    assert same.status_code == 204
    task = await api.dequeue(stage_type)
    assert task is not None
    assert (await api.stage(task["stageId"]))["jobId"] == low["id"]


async def test_retry_to_exhaustion_fails_stage_and_job(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    task = (await api.create_tasks(stage["id"], maxAttempts=3))[0]
    assert (task["maxAttempts"], task["attempts"], task["status"]) == (3, 0, "PENDING")
    for attempt, expected in enumerate(["RETRIED", "RETRIED", "FAILED"]):
        claimed = await api.dequeue(stage["type"])
        assert claimed is not None and claimed["id"] == task["id"]
        assert (claimed["status"], claimed["attempts"]) == ("IN_PROGRESS", attempt)
        await api.report(task["id"], "FAILED")
        got = await api.task(task["id"])
        assert (got["status"], got["attempts"], got["maxAttempts"]) == (expected, attempt + 1, 3)
    got_stage = await api.stage(stage["id"])
    assert got_stage["status"] == "FAILED" and got_stage["summary"] == summary(failed=1)
    assert (await api.job(job["id"]))["status"] == "FAILED"
    assert await api.dequeue(stage["type"]) is None
    await assert_invariants(db)


async def test_retry_then_success(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    task = (await api.create_tasks(stage["id"], maxAttempts=3))[0]
    await api.run_one(stage["type"], "FAILED")
    got = await api.task(task["id"])
    assert (got["status"], got["attempts"]) == ("RETRIED", 1)
    assert (await api.stage(stage["id"]))["summary"] == summary(retried=1)
    again = await api.dequeue(stage["type"])
    assert again is not None and (again["id"], again["attempts"]) == (task["id"], 1)
    await api.report(task["id"], "COMPLETED")
    got = await api.task(task["id"])
    assert (got["status"], got["attempts"]) == ("COMPLETED", 1)
    got_stage = await api.stage(stage["id"])
    assert (got_stage["status"], got_stage["percentage"]) == ("COMPLETED", 100)
    assert got_stage["summary"] == summary(completed=1)
    got_job = await api.job(job["id"])
    assert (got_job["status"], got_job["percentage"]) == ("COMPLETED", 100)


async def test_default_max_attempts(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    task = (await api.create_tasks(stage["id"]))[0]
    assert task["maxAttempts"] == 1 and task["attempts"] == 0
    claimed = await api.dequeue(stage["type"])
    assert claimed is not None and (claimed["id"], claimed["attempts"]) == (task["id"], 0)
    # One attempt: the first failure is final.
    assert (await api.report(task["id"], "FAILED"))["status"] == "FAILED"


async def test_shared_stage_type_across_jobs(api: Api) -> None:
    shared = unique("shared")
    for _ in range(2):
        job = await api.create_job()
        await api.create_tasks((await api.create_stage(job["id"], shared))["id"])
    assert await api.dequeue(shared) is not None
    assert await api.dequeue(shared) is not None
    assert await api.dequeue(shared) is None


async def test_waiting_stage_is_not_dequeued_until_approved(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], waiting=True)
    assert stage["status"] == "WAITING"
    await api.create_tasks(stage["id"])
    assert await api.dequeue(stage["type"]) is None
    await api.approve(stage["id"])
    assert (await api.stage(stage["id"]))["status"] == "PENDING"
    assert await api.dequeue(stage["type"]) is not None


async def test_waiting_middle_stage_holds_the_job_until_approved(api: Api, db: Database) -> None:
    job = await api.create_job()
    s1 = await api.create_stage(job["id"])
    await api.create_tasks(s1["id"])
    s2 = await api.create_stage(job["id"], waiting=True)
    await api.create_tasks(s2["id"])
    s3 = await api.create_stage(job["id"])
    await api.create_tasks(s3["id"])
    # Approval before its turn is refused.
    err = await api.approve(s2["id"], expect=400)
    assert err == {
        "message": "Previous stage is not COMPLETED",
        "code": "ILLEGAL_STAGE_STATUS_TRANSITION",
    }
    await api.run_one(s1["type"])
    assert (await api.stage(s1["id"]))["status"] == "COMPLETED"
    assert (await api.stage(s2["id"]))["status"] == "WAITING"
    assert await api.dequeue(s2["type"]) is None
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"
    await api.approve(s2["id"])
    assert (await api.stage(s2["id"]))["status"] == "PENDING"
    await api.run_one(s2["type"])
    await api.run_one(s3["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)


async def _run_n_stage_job(api: Api, n: int, tasks_per_stage: int = 1) -> list[int]:
    job = await api.create_job()
    stages = []
    for _ in range(n):
        stage = await api.create_stage(job["id"])
        await api.create_tasks(stage["id"], tasks_per_stage)
        stages.append(stage)
    assert [st["status"] for st in stages] == ["PENDING"] + ["CREATED"] * (n - 1)
    percentages = [(await api.job(job["id"]))["percentage"]]
    for i, stage in enumerate(stages):
        for _ in range(tasks_per_stage):
            await api.run_one(stage["type"])
        assert (await api.stage(stage["id"]))["status"] == "COMPLETED"
        if i + 1 < n:
            assert (await api.stage(stages[i + 1]["id"]))["status"] == "PENDING"
        if i + 2 < n:
            assert (await api.stage(stages[i + 2]["id"]))["status"] == "CREATED"
        percentages.append((await api.job(job["id"]))["percentage"])
    listed = await api.call("GET", f"/v1/jobs/{job['id']}/stages")
    assert [st["order"] for st in listed] == list(range(1, n + 1))
    assert [st["id"] for st in listed] == [st["id"] for st in stages]
    assert all(st["status"] == "COMPLETED" and st["jobId"] == job["id"] for st in listed)
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    return percentages


async def test_three_stage_job(api: Api) -> None:
    assert await _run_n_stage_job(api, 3) == [0, 33, 66, 100]


async def test_four_stage_job_percentages(api: Api) -> None:
    assert await _run_n_stage_job(api, 4) == [0, 25, 50, 75, 100]


async def test_five_stages_with_two_tasks_each(api: Api, db: Database) -> None:
    assert await _run_n_stage_job(api, 5, tasks_per_stage=2) == [0, 20, 40, 60, 80, 100]
    await assert_invariants(db)


async def test_failure_in_a_middle_stage_fails_the_job(api: Api, db: Database) -> None:
    job = await api.create_job()
    s1, s2, s3 = [await api.create_stage(job["id"]) for _ in range(3)]
    await api.create_tasks(s1["id"])
    await api.create_tasks(s2["id"], maxAttempts=1)
    await api.create_tasks(s3["id"])
    await api.run_one(s1["type"])
    await api.run_one(s2["type"], "FAILED")
    assert (await api.stage(s2["id"]))["status"] == "FAILED"
    assert (await api.job(job["id"]))["status"] == "FAILED"
    assert (await api.stage(s3["id"]))["status"] in ("CREATED", "WAITING")
    assert await api.dequeue(s3["type"]) is None
    await assert_invariants(db)


async def test_stage_listing_keeps_creation_order_and_paginates(api: Api) -> None:
    job = await api.create_job()
    created = [await api.create_stage(job["id"]) for _ in range(5)]
    listed = await api.call("GET", f"/v1/jobs/{job['id']}/stages")
    assert [st["id"] for st in listed] == [st["id"] for st in created]
    seen = []
    for page, size in ((1, 2), (2, 2), (3, 1)):
        got = await api.call(
            "GET", "/v1/stages", params={"job_id": job["id"], "page_size": 2, "page": page}
        )
        assert got["total"] == 5 and len(got["items"]) == size
        seen += [st["id"] for st in got["items"]]
    assert seen == [st["id"] for st in created]


async def test_delete_finished_jobs_cascades(api: Api) -> None:
    completed = await api.create_job()
    s1 = await api.create_stage(completed["id"])
    t1 = (await api.create_tasks(s1["id"]))[0]
    s2 = await api.create_stage(completed["id"])
    t2 = (await api.create_tasks(s2["id"]))[0]
    await api.run_one(s1["type"])
    await api.run_one(s2["type"])
    failed = await api.create_job()
    fs = await api.create_stage(failed["id"])
    await api.create_tasks(fs["id"], maxAttempts=1)
    await api.run_one(fs["type"], "FAILED")
    aborted = await api.create_job()
    await api.set_job_status(aborted["id"], "ABORTED")
    for job in (completed, failed, aborted):
        answer = await api.call("DELETE", f"/v1/jobs/{job['id']}")
        assert answer == {"code": "JOB_DELETED_SUCCESSFULLY"}
        assert (await api.call("GET", f"/v1/jobs/{job['id']}", 404))["code"] == "JOB_NOT_FOUND"
    for st in (s1, s2):
        assert (await api.call("GET", f"/v1/stages/{st['id']}", 404))["code"] == "STAGE_NOT_FOUND"
    for t in (t1, t2):
        assert (await api.call("GET", f"/v1/tasks/{t['id']}", 404))["code"] == "TASK_NOT_FOUND"


async def test_delete_refused_for_unfinished_jobs(api: Api) -> None:
    pending = await api.create_job()
    running = await api.create_job()
    rs = await api.create_stage(running["id"])
    await api.create_tasks(rs["id"], 2)
    await api.dequeue(rs["type"])
    paused = await api.create_job()
    await api.set_job_status(paused["id"], "PAUSED")
    for job in (pending, running, paused):
        err = await api.call("DELETE", f"/v1/jobs/{job['id']}", 400)
        assert err["code"] == "JOB_NOT_IN_FINITE_STATE"
        assert (await api.job(job["id"]))["id"] == job["id"]


async def test_delete_unknown_job_is_404(api: Api) -> None:
    err = await api.call("DELETE", "/v1/jobs/00000000-0000-0000-0000-000000000000", 404)
    assert err["code"] == "JOB_NOT_FOUND"
