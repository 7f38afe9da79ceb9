"""Reads, filters, pagination, user metadata, one-call creation, health and docs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..support.api import Api, unique


async def test_find_jobs_filters_and_paginates(api: Api) -> None:
    name = unique("nightly")
    high = [await api.create_job("HIGH", name=name) for _ in range(3)]
    await api.create_job("LOW", name=name)
    await api.create_job("HIGH")
    got = await api.call("GET", "/v1/jobs", params={"job_name": name, "priority": "HIGH"})
    assert got["total"] == 3 and [j["id"] for j in got["items"]] == [j["id"] for j in high]
    page2 = await api.call("GET", "/v1/jobs", params={"job_name": name, "page": 2, "page_size": 3})
    assert page2["total"] == 4 and len(page2["items"]) == 1
    assert (await api.call("GET", "/v1/jobs", params={"page": 99}))["items"] == []
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert (await api.call("GET", "/v1/jobs", params={"from_date": future}))["total"] == 0
    assert (await api.call("GET", "/v1/jobs", params={"end_date": future}))["total"] == 5
    assert "stages" not in got["items"][0]


async def test_should_return_stages_and_tasks(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    tasks = await api.create_tasks(stage["id"], 3)
    with_stages = await api.job(job["id"], should_return_stages="true")
    assert [st["id"] for st in with_stages["stages"]] == [stage["id"]]
    listed = await api.call(
        "GET", "/v1/jobs", params={"job_name": job["name"], "should_return_stages": True}
    )
    assert listed["items"][0]["stages"][0]["summary"]["pending"] == 3
    full = await api.call("GET", f"/v1/stages/{stage['id']}", params={"should_return_tasks": True})
    assert [t["id"] for t in full["tasks"]] == [t["id"] for t in tasks]
    by_job = await api.call(
        "GET", f"/v1/jobs/{job['id']}/stages", params={"should_return_tasks": True}
    )
    assert len(by_job[0]["tasks"]) == 3
    assert "tasks" not in await api.stage(stage["id"])


async def test_find_stages_and_tasks(api: Api) -> None:
    kind = unique("kind")
    job = await api.create_job()
    first = await api.create_stage(job["id"], kind)
    second = await api.create_stage(job["id"], kind, waiting=True)
    await api.create_tasks(first["id"], 3)
    await api.create_tasks(second["id"], 2)
    await api.run_one(kind)
    waiting = await api.call(
        "GET", "/v1/stages", params={"stage_type": kind, "stage_operation_status": "WAITING"}
    )
    assert [st["id"] for st in waiting["items"]] == [second["id"]]
    assert (await api.call("GET", "/v1/stages", params={"job_id": job["id"]}))["total"] == 2
    done = await api.call("GET", "/v1/tasks", params={"stage_type": kind, "status": "COMPLETED"})
    assert done["total"] == 1 and done["items"][0]["stageId"] == first["id"]
    in_stage = await api.call("GET", "/v1/tasks", params={"stage_id": second["id"]})
    assert in_stage["total"] == 2
    paged = await api.call(
        "GET", f"/v1/stages/{first['id']}/tasks", params={"page": 2, "page_size": 2}
    )
    assert paged["total"] == 3 and len(paged["items"]) == 1


async def test_user_metadata_is_replaced(api: Api) -> None:
    job = await api.create_job(userMetadata={"a": 1, "b": 2})
    stage = await api.create_stage(job["id"], userMetadata={"x": 1})
    task = (await api.create_tasks(stage["id"], userMetadata={"t": 1}))[0]
    for kind, entity_id, code in (
        ("jobs", job["id"], "JOB_MODIFIED_SUCCESSFULLY"),
        ("stages", stage["id"], "STAGE_MODIFIED_SUCCESSFULLY"),
        ("tasks", task["id"], "TASK_MODIFIED_SUCCESSFULLY"),
    ):
        answer = await api.call(
            "PATCH", f"/v1/{kind}/{entity_id}/user-metadata", json={"only": kind}
        )
        assert answer == {"code": code}
        got = await api.call("GET", f"/v1/{kind}/{entity_id}")
        assert got["userMetadata"] == {"only": kind}


async def test_job_with_stages_and_tasks_in_one_call(api: Api) -> None:
    body = {
        "name": unique("bundle"),
        "data": {},
        "priority": "HIGH",
        "stages": [
            {"type": unique("a"), "data": {}, "tasks": [{"data": {"n": 1}}, {"data": {"n": 2}}]},
            {"type": unique("b"), "data": {}, "startAsWaiting": True, "tasks": [{"data": {}}]},
            {"type": unique("c"), "data": {}},
        ],
    }
    job = await api.call("POST", "/v1/jobs", 201, json=body)
    assert [st["status"] for st in job["stages"]] == ["PENDING", "WAITING", "CREATED"]
    assert [st["order"] for st in job["stages"]] == [1, 2, 3]
    assert [len(st["tasks"]) for st in job["stages"]] == [2, 1, 0]
    first = job["stages"][0]
    assert first["summary"]["pending"] == 2 and first["summary"]["total"] == 2
    # Trace context flows down: the stage and its tasks share the job's trace id.
    trace_id = job["traceparent"].split("-")[1]
    assert first["traceparent"].split("-")[1] == trace_id
    assert first["tasks"][0]["traceparent"].split("-")[1] == trace_id
    await api.run_one(first["type"])
    await api.run_one(first["type"])
    assert (await api.stage(job["stages"][1]["id"]))["status"] == "WAITING"
    await api.approve(job["stages"][1]["id"])
    await api.run_one(job["stages"][1]["type"])
    # The empty last stage completes when its turn comes, and so does the job.
    assert (await api.stage(job["stages"][2]["id"]))["status"] == "COMPLETED"
    got = await api.job(job["id"])
    assert (got["status"], got["percentage"]) == ("COMPLETED", 100)


async def test_given_trace_context_is_kept(api: Api) -> None:
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    job = await api.create_job(traceparent=traceparent, tracestate="rojo=00f067aa0ba902b7")
    assert job["traceparent"] == traceparent and job["tracestate"] == "rojo=00f067aa0ba902b7"


async def test_approving_an_empty_waiting_stage_completes_it(api: Api) -> None:
    job = await api.create_job()
    first = await api.create_stage(job["id"])
    await api.create_tasks(first["id"])
    empty = await api.create_stage(job["id"], waiting=True)
    last = await api.create_stage(job["id"])
    await api.create_tasks(last["id"])
    await api.run_one(first["type"])
    await api.approve(empty["id"])
    assert (await api.stage(empty["id"]))["status"] == "COMPLETED"
    assert (await api.stage(last["id"]))["status"] == "PENDING"
    await api.run_one(last["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_health_and_docs(api: Api) -> None:
    assert await api.call("GET", "/liveness") == {"status": "ok"}
    assert await api.call("GET", "/readiness") == {"status": "ok"}
    assert (await api.http.get("/docs")).status_code == 200
    spec = await api.call("GET", "/openapi.json")
    for path in (
        "/v1/jobs",
        "/v1/jobs/{jobId}",
        "/v1/jobs/{jobId}/user-metadata",
        "/v1/jobs/{jobId}/priority",
        "/v1/jobs/{jobId}/status",
        "/v1/jobs/{jobId}/stages",
        "/v1/jobs/{jobId}/stage",
        "/v1/stages",
        "/v1/stages/{stageId}",
        "/v1/stages/{stageId}/summary",
        "/v1/stages/{stageId}/user-metadata",
        "/v1/stages/{stageId}/status",
        "/v1/stages/{stageId}/tasks",
        "/v1/stages/{stageType}/tasks/dequeue",
        "/v1/tasks",
        "/v1/tasks/{taskId}",
        "/v1/tasks/{taskId}/user-metadata",
        "/v1/tasks/{taskId}/status",
    ):
        assert path in spec["paths"], path
