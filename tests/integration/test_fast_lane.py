"""The fast lane (api/fast_lane.py) answers the dequeue, the status report, the batch
claim and the batch report exactly as FastAPI's routes do: the same requests, run
through the app with and without it, get the same statuses and bodies (ids and times
aside), errors included."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from jobnik_manager.api.fast_lane import FastLane
from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

from ..conftest import app_client
from ..support.api import Api, unique
from ..support.invariants import assert_invariants

UNKNOWN_TASK = "6f1c2a4e-0000-4000-8000-00000000abcd"
# Values that differ from run to run; their keys and types must still match.
VARYING = {"id", "stageId", "creationTime", "updateTime", "startTime", "endTime", "leaseId"}
VARYING |= {"leaseExpiresAt", "traceparent"}


@asynccontextmanager
async def _client_without_fast_lane(db: Database) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=db.url), database=db)
    app.user_middleware = [m for m in app.user_middleware if m.cls is not FastLane]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as c:
        yield c


Answer = tuple[int, str, Any]


def _answer(response: httpx.Response) -> Answer:
    body = response.json()
    if isinstance(body, dict) and "traceparent" in body:  # a task: ids and times vary
        body = {k: (type(v).__name__ if k in VARYING else v) for k, v in body.items()}
    return response.status_code, response.headers["content-type"], body


async def _scenario(http: httpx.AsyncClient, stage_type: str, nothing: str) -> list[Answer]:
    api = Api(http)
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    await api.create_tasks(stage["id"], 3, maxAttempts=2)
    answers: list[Answer] = []

    async def put(task_id: str, body: Any, **kw: Any) -> dict[str, Any]:
        response = await http.put(f"/v1/tasks/{task_id}/status", json=body, **kw)
        answers.append(_answer(response))
        return response.json()  # type: ignore[no-any-return]

    async def dequeue(path_type: str, **kw: Any) -> dict[str, Any]:
        response = await http.patch(f"/v1/stages/{path_type}/tasks/dequeue", **kw)
        answers.append(_answer(response))
        return response.json()  # type: ignore[no-any-return]

    first = await dequeue(stage_type)
    await put(first["id"], {"status": "COMPLETED", "result": {"n": 1}})
    await put(first["id"], {"status": "COMPLETED"})  # a repeated completion
    await put(first["id"], {"status": "FAILED"})  # not from COMPLETED
    second = await dequeue(stage_type)
    await put(second["id"], {"status": "COMPLETED", "leaseId": str(uuid.uuid4())})  # lost
    await put(second["id"], {"status": "FAILED", "reason": "boom"})  # retried
    await put(second["id"], {"status": "COMPLETED", "leaseId": second["leaseId"]})
    await put(UNKNOWN_TASK, {"status": "COMPLETED"})
    await put(second["id"], {"status": "NOPE"})
    await put(second["id"], {"status": "COMPLETED", "extra": 1})
    await put(second["id"], [])
    await put("not-a-uuid", {"status": "COMPLETED"})
    response = await http.put(
        f"/v1/tasks/{second['id']}/status",
        content=b'{"status": "COMPLETED"}',
        headers={"content-type": "text/plain"},
    )
    answers.append(_answer(response))
    response = await http.put(f"/v1/tasks/{second['id']}/status", content=b"{")
    answers.append(_answer(response))
    await dequeue(stage_type, params={"worker": "w-1", "lease_seconds": 30})
    await dequeue("x" * 51)
    await dequeue(nothing)
    await dequeue(stage_type)  # the last one
    await dequeue(stage_type)  # none left
    return answers


def _same_type_names(answers: list[Answer], type_name: str, other: str) -> list[Answer]:
    # The 404 messages name the stage type each scenario used.
    return [
        (
            status,
            ctype,
            {k: v.replace(type_name, other) if isinstance(v, str) else v for k, v in body.items()}
            if isinstance(body, dict)
            else body,
        )
        for status, ctype, body in answers
    ]


async def test_the_fast_lane_answers_as_the_routes_do(db: Database) -> None:
    nothing = unique("nothing")
    async with app_client(db) as fast, _client_without_fast_lane(db) as plain:
        fast_type, plain_type = unique("lane"), unique("lane")
        with_lane = await _scenario(fast, fast_type, nothing)
        without = await _scenario(plain, plain_type, nothing)
    assert _same_type_names(with_lane, fast_type, "T") == _same_type_names(without, plain_type, "T")
    statuses = [status for status, _, _ in with_lane]
    assert statuses.count(200) >= 6 and {400, 404, 409} <= set(statuses)
    await assert_invariants(db)


def _blurred(value: Any) -> Any:
    """`value` with what varies from run to run (ids, times) replaced by its type's name."""
    if isinstance(value, dict):
        return {
            k: type(v).__name__ if k in VARYING | {"jobId", "taskId", "name"} else _blurred(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_blurred(v) for v in value]
    return value


async def _batch_scenario(http: httpx.AsyncClient, stage_type: str) -> list[Answer]:
    api = Api(http)
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    await api.create_tasks(stage["id"], 4, maxAttempts=2)
    answers: list[Answer] = []

    async def post(path: str, body: Any = None, **kw: Any) -> Any:
        response = await http.post(path, json=body, **kw) if body is not None else None
        if response is None:
            response = await http.post(path, **kw)
        answers.append((response.status_code, response.headers["content-type"], response.json()))
        return response.json()

    claim = "/v1/tasks/claim"
    one = await post(claim, {"stageTypes": [stage_type], "worker": "w-1", "leaseSeconds": 30})
    two = await post(claim, {"stageTypes": [stage_type], "limit": 2, "withContext": True})
    await post(claim, {"stageTypes": [stage_type], "limit": 0})
    await post(claim, {"stageTypes": [stage_type], "extra": 1})
    await post(claim, {"stageTypes": []})
    await post(claim, [])
    await post(claim, content=b"{", headers={"content-type": "application/json"})
    await post(claim, content=b'{"stageTypes": ["x"]}', headers={"content-type": "text/plain"})
    await post(claim, {"stageTypes": [stage_type]}, params={"limit": 3})
    await post(claim, {"stageTypes": [unique("none")], "waitSeconds": 0.05})
    reports = "/v1/tasks/reports"
    first = one["items"][0]
    await post(
        reports,
        {
            "reports": [
                {"taskId": first["id"], "leaseId": first["leaseId"], "status": "COMPLETED"},
                {"taskId": first["id"], "leaseId": first["leaseId"], "status": "COMPLETED"},
                {"taskId": UNKNOWN_TASK, "leaseId": first["leaseId"], "status": "COMPLETED"},
            ]
        },
    )
    item = two["items"][0]
    await post(
        reports,
        {"reports": [{"taskId": item["id"], "leaseId": item["leaseId"], "status": "FAILED"}]},
    )
    await post(reports, {"reports": []})
    await post(reports, {"reports": [{"taskId": "nope", "status": "COMPLETED"}]})
    # The stage type differs between the runs; its every mention is made the same.
    named = json.loads(json.dumps(answers).replace(stage_type, "T"))
    return [(status, ctype, _blurred(body)) for status, ctype, body in named]


async def test_the_fast_lane_claims_and_reports_as_the_routes_do(db: Database) -> None:
    async with app_client(db) as fast, _client_without_fast_lane(db) as plain:
        fast_type, plain_type = unique("batch"), unique("batch")
        with_lane = await _batch_scenario(fast, fast_type)
        without = await _batch_scenario(plain, plain_type)
    assert with_lane == without
    statuses = [status for status, _, _ in with_lane]
    assert statuses.count(200) >= 5 and 400 in statuses
    await assert_invariants(db)


async def test_a_method_the_fast_paths_do_not_take_is_refused_405_and_changes_nothing(
    db: Database, api: Api
) -> None:
    # The router gives a route every request of its path (a partial match for another
    # method): a fast route must not answer one as its own.
    _, stage, [task] = await api.one_stage_job(unique("method"))
    claim = {"stageTypes": [stage["type"]], "limit": 1}
    calls = [
        ("TRACE", "/v1/tasks/claim", claim),
        ("GET", "/v1/tasks/claim", claim),
        ("TRACE", "/v1/tasks/reports", {"reports": [{"taskId": task["id"], "status": "FAILED"}]}),
        ("TRACE", f"/v1/tasks/{task['id']}/status", {"status": "FAILED"}),
        ("TRACE", f"/v1/stages/{stage['type']}/tasks/dequeue", None),
        ("POST", f"/v1/stages/{stage['type']}/tasks/dequeue", None),
    ]
    for method, path, body in calls:
        answer = await api.http.request(method, path, json=body)
        assert answer.status_code == 405, (method, path, answer.text)
        assert answer.json()["code"] == "METHOD_NOT_ALLOWED"
        assert method not in answer.headers["allow"]
    assert (await api.task(task["id"]))["status"] == "PENDING"
    await assert_invariants(db)


class _RouterSeen:
    """Outermost: notes, for each request, whether FastAPI's router saw it (Starlette's
    router leaves itself in the request's scope)."""

    def __init__(self, app: ASGIApp, seen: list[tuple[str, str, bool]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"], "router" in scope))


async def test_the_workers_calls_are_answered_without_fastapis_router(db: Database) -> None:
    seen: list[tuple[str, str, bool]] = []
    app = create_app(Settings(database_url=db.url), database=db)
    app.add_middleware(_RouterSeen, seen=seen)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        api = Api(http)
        job, stage, _ = await api.one_stage_job(unique("seen"), tasks=3)
        kind = stage["type"]
        del seen[:]
        dequeued = (await http.patch(f"/v1/stages/{kind}/tasks/dequeue")).json()
        reads = [f"/v1/tasks/{dequeued['id']}", f"/v1/stages/{stage['id']}"]
        reads.append(f"/v1/jobs/{job['id']}")
        for path in reads:
            assert (await http.get(path)).status_code == 200, path
        done = await http.put(f"/v1/tasks/{dequeued['id']}/status", json={"status": "COMPLETED"})
        assert done.status_code == 200, done.text
        claimed = (await http.post("/v1/tasks/claim", json={"stageTypes": [kind]})).json()
        [item] = claimed["items"]
        report = {"taskId": item["id"], "leaseId": item["leaseId"], "status": "COMPLETED"}
        answer = await http.post("/v1/tasks/reports", json={"reports": [report]})
        assert answer.status_code == 200, answer.text
        missing = await http.get(f"/v1/stages/{UNKNOWN_TASK}")  # a route's error, answered
        assert (missing.status_code, missing.json()["code"]) == (404, "STAGE_NOT_FOUND")
        fast = [(method, by_router) for method, _, by_router in seen]
        methods = ("PATCH", "GET", "GET", "GET", "PUT", "POST", "POST", "GET")
        assert fast == [(m, False) for m in methods]
        # What the fast lane does not take goes on to FastAPI's route.
        del seen[:]
        with_tasks = await http.get(f"/v1/stages/{stage['id']}?should_return_tasks=true")
        assert with_tasks.status_code == 200 and len(with_tasks.json()["tasks"]) == 3
        bad_id = await http.get("/v1/jobs/not-an-id")
        assert bad_id.status_code == 400
        assert [by_router for _, _, by_router in seen] == [True, True]
    await assert_invariants(db)
