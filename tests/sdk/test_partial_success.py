"""Partial success (`allowedFailures` on a stage), on the manager (SQLite and PostgreSQL,
in-process) and on the fake alike, over HTTP and through the SDK: a stage whose failed
tasks stay within its allowance completes, marked `partial`, its job too, and the next
stage runs; one failure more fails it as before; a client that sends nothing sees v1."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from jobnik_sdk import JobnikClient, JobStatus, NewStage, NewTask, StageStatus
from jobnik_sdk.testing import FakeJobnik

from ..support.api import Api, unique

# `api`: the manager on each backend, or the fake, over HTTP (conftest.py).


async def _job(api: Api, allowed: int | None, tasks: int = 3) -> tuple[dict[str, Any], str, str]:
    kind, after = unique("partly"), unique("after")
    first: dict[str, Any] = {"type": kind, "data": {}, "tasks": [{"data": {}}] * tasks}
    if allowed is not None:
        first["allowedFailures"] = allowed
    job = await api.create_job(stages=[first, {"type": after, "data": {}, "tasks": [{"data": {}}]}])
    return job, kind, after


async def test_failures_within_the_allowance_complete_the_stage_and_job_partly(api: Api) -> None:
    job, kind, after = await _job(api, allowed=1)
    assert job["stages"][0]["allowedFailures"] == 1
    await api.run_one(kind, "FAILED")
    await api.run_one(kind)
    await api.run_one(kind)
    stage = await api.stage(job["stages"][0]["id"])
    assert (stage["status"], stage["partial"]) == ("COMPLETED", True)
    assert (stage["summary"]["failed"], stage["summary"]["completed"]) == (1, 2)
    await api.run_one(after)  # the next stage ran
    done = await api.job(job["id"], should_return_stages="true")
    assert (done["status"], done["partial"], done["percentage"]) == ("COMPLETED", True, 100)
    assert "reason" not in done and "failedTaskId" not in done
    assert "partial" not in done["stages"][1], "a stage with nothing failed is not partial"


async def test_one_failure_more_than_allowed_fails_the_stage_and_job(api: Api) -> None:
    job, kind, _ = await _job(api, allowed=1, tasks=4)
    await api.run_one(kind, "FAILED")
    await api.run_one(kind)
    last = await api.dequeue(kind)
    assert last is not None
    await api.call(
        "PUT", f"/v1/tasks/{last['id']}/status", json={"status": "FAILED", "reason": "second"}
    )
    failed = await api.job(job["id"], should_return_stages="true")
    assert (failed["status"], failed["reason"], failed["failedTaskId"]) == (
        "FAILED",
        "second",
        last["id"],
    )
    first = failed["stages"][0]
    assert first["status"] == "FAILED" and "partial" not in first
    assert first["summary"]["aborted"] == 1, "its task not yet started was aborted"


async def test_a_client_that_sends_no_allowance_sees_v1(api: Api) -> None:
    job, kind, _ = await _job(api, allowed=None)
    assert not {"allowedFailures", "partial"} & job["stages"][0].keys()
    assert "partial" not in job
    await api.run_one(kind, "FAILED")
    assert (await api.job(job["id"]))["status"] == "FAILED"


@pytest.mark.parametrize("allowed", [-1, 1.5, "2", True, 2**31])
async def test_a_bad_allowance_is_refused_and_nothing_is_made(api: Api, allowed: Any) -> None:
    name = unique("refused")
    stage = {"type": unique("k"), "data": {}, "allowedFailures": allowed}
    refused = await api.call(
        "POST", "/v1/jobs", 400, json={"name": name, "data": {}, "stages": [stage]}
    )
    assert refused["code"] == "VALIDATION_ERROR" and "allowedFailures" in refused["message"]
    assert (await api.call("GET", "/v1/jobs", params={"job_name": name}))["total"] == 0
    job = await api.create_job()
    added = await api.call("POST", f"/v1/jobs/{job['id']}/stage", 400, json=stage)
    assert added["code"] == "VALIDATION_ERROR"
    assert await api.call("GET", f"/v1/jobs/{job['id']}/stages") == []


async def test_the_sdk_sets_the_allowance_and_wait_says_partial(
    surface: JobnikClient | FakeJobnik,
) -> None:
    kind = unique("sdk-partly")
    job = await surface.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=[NewTask(), NewTask()], allowed_failures=1)],
    )
    assert job.stages is not None and job.stages[0].allowed_failures == 1
    first, second = await surface.claim(kind, limit=2)
    await surface.fail(first.id, lease_id=first.lease_id, reason="bad tile")
    await surface.complete(second.id, lease_id=second.lease_id)
    done = await surface.wait(job.id, poll_interval=timedelta(milliseconds=10))
    assert (done.status, done.partial) == (JobStatus.COMPLETED, True)
    [stage] = await surface.get_job_stages(job.id)
    assert (stage.status, stage.partial, stage.allowed_failures) == (
        StageStatus.COMPLETED,
        True,
        1,
    )
