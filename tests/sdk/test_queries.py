"""Queries over HTTP, on the manager (SQLite and PostgreSQL, in-process) and on the fake
alike: jobs by status, unknown query parameters refused, empty stages in a one-call
create that do not block their job."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.api import Api, unique

# `api`: the manager on each backend, or the fake, over HTTP (conftest.py).


async def _job_with_one_task(api: Api, name: str) -> tuple[dict[str, Any], str]:
    kind = unique("kind")
    job = await api.create_job(
        name=name, stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}]
    )
    return job, kind


async def test_jobs_are_found_by_one_status_or_several(api: Api) -> None:
    name = unique("by-status")
    pending, _ = await _job_with_one_task(api, name)
    failed, failing = await _job_with_one_task(api, name)
    await api.run_one(failing, "FAILED")
    aborted, _ = await _job_with_one_task(api, name)
    await api.set_job_status(aborted["id"], "ABORTED")
    completed, done = await _job_with_one_task(api, name)
    await api.run_one(done)

    async def found(*statuses: str) -> list[str]:
        params = [("job_name", name), *(("status", s) for s in statuses)]
        page = await api.call("GET", "/v1/jobs", params=params)
        return [job["id"] for job in page["items"]]

    assert await found("FAILED") == [failed["id"]]
    assert await found("FAILED", "ABORTED") == [failed["id"], aborted["id"]]
    assert await found("PENDING", "COMPLETED") == [pending["id"], completed["id"]]
    assert await found() == [pending["id"], failed["id"], aborted["id"], completed["id"]]
    assert await found("IN_PROGRESS") == []
    refused = await api.call("GET", "/v1/jobs", 400, params={"status": "DONE"})
    assert refused["code"] == "VALIDATION_ERROR"


async def test_an_unknown_query_parameter_is_refused_and_changes_nothing(api: Api) -> None:
    job, kind = await _job_with_one_task(api, unique("strict"))
    listed = await api.call("GET", "/v1/jobs", 400, params={"jobname": job["name"]})
    assert listed["code"] == "VALIDATION_ERROR" and "jobname" in listed["message"]

    paused = await api.call(
        "PUT",
        f"/v1/jobs/{job['id']}/status",
        400,
        params={"force": "true"},
        json={"status": "PAUSED"},
    )
    assert paused["code"] == "VALIDATION_ERROR" and "force" in paused["message"]
    assert (await api.job(job["id"]))["status"] == "PENDING"

    for method, path, options in [
        ("PATCH", f"/v1/stages/{kind}/tasks/dequeue", {"params": {"lease": "30"}}),
        ("POST", "/v1/tasks/claim", {"params": {"n": "1"}, "json": {"stageTypes": [kind]}}),
    ]:
        refused = await api.call(method, path, 400, **options)
        assert refused["code"] == "VALIDATION_ERROR"
    # Nothing was claimed: the task is still there for a proper call.
    assert await api.dequeue(kind) is not None
    # A parameter the route takes is still taken.
    assert (await api.call("GET", "/v1/jobs", params={"job_name": job["name"]}))["total"] == 1


@pytest.mark.parametrize("empty_at", ["first", "middle", "last", "everywhere"])
async def test_empty_stages_of_a_one_call_create_do_not_block_the_job(
    api: Api, empty_at: str
) -> None:
    """A stage created with an empty list of tasks (`"tasks": []`, not left out: tasks may
    be added later to a stage created without the key) passes when its turn comes."""

    def stage(kind: str | None) -> dict[str, Any]:
        tasks = [{"data": {}}] if kind else []
        return {"type": kind or unique("empty"), "data": {}, "tasks": tasks}

    kinds = [unique("work-a"), unique("work-b")]
    layout: list[str | None] = {
        "first": [None, kinds[0], kinds[1]],
        "middle": [kinds[0], None, kinds[1]],
        "last": [kinds[0], kinds[1], None],
        "everywhere": [None, kinds[0], None, kinds[1], None],
    }[empty_at]
    job = await api.create_job(stages=[stage(kind) for kind in layout])
    # The answer shows the stages as they stand: empty ones ahead of the first with work
    # have passed already.
    ahead = layout.index(kinds[0])
    assert [st["status"] for st in job["stages"]] == (
        ["COMPLETED"] * ahead + ["PENDING"] + ["CREATED"] * (len(layout) - ahead - 1)
    )
    for kind in kinds:
        await api.run_one(kind)  # each is claimable once the stages before are done
    done = await api.job(job["id"], should_return_stages="true")
    assert done["status"] == "COMPLETED" and done["percentage"] == 100
    assert [st["status"] for st in done["stages"]] == ["COMPLETED"] * len(layout)
