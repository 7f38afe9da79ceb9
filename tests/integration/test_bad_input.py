"""Bad input answers 400 `{message, code}` and changes nothing; no input answers 5xx."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.api import Api

BAD_UUID = "not-a-uuid"
UNKNOWN = "00000000-0000-0000-0000-000000000000"


def _assert_error(response: Any, status: int, code: str = "VALIDATION_ERROR") -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"message", "code"}, body
    assert body["code"] == code
    assert isinstance(body["message"], str) and body["message"]


JOB_BODIES: list[tuple[str, Any]] = [
    ("missing name", {"data": {}}),
    ("missing data", {"name": "ok-name"}),
    ("name too short", {"name": "x", "data": {}}),
    ("name too long", {"name": "x" * 51, "data": {}}),
    ("name wrong type", {"name": 12, "data": {}}),
    ("data wrong type", {"name": "ok-name", "data": "text"}),
    ("data is a list", {"name": "ok-name", "data": [1]}),
    ("unknown field", {"name": "ok-name", "data": {}, "colour": "red"}),
    ("unknown priority", {"name": "ok-name", "data": {}, "priority": "SUPER_HIGH"}),
    ("priority wrong type", {"name": "ok-name", "data": {}, "priority": 3}),
    ("userMetadata wrong type", {"name": "ok-name", "data": {}, "userMetadata": [1]}),
    ("bad traceparent", {"name": "ok-name", "data": {}, "traceparent": "00-zz-01"}),
    ("NUL in name", {"name": "ab\u0000cd", "data": {}}),
    ("NUL in data", {"name": "ok-name", "data": {"k": "a\u0000b"}}),
    ("NUL in data key", {"name": "ok-name", "data": {"a\u0000": 1}}),
    ("stage in job without type", {"name": "ok-name", "data": {}, "stages": [{"data": {}}]}),
    (
        "task in job with maxAttempts 0",
        {
            "name": "ok-name",
            "data": {},
            "stages": [{"type": "t", "data": {}, "tasks": [{"data": {}, "maxAttempts": 0}]}],
        },
    ),
    ("body is an array", [{"name": "ok-name", "data": {}}]),
    ("body is a string", "job"),
    ("body is null", None),
]


@pytest.mark.parametrize(("case", "body"), JOB_BODIES, ids=[c for c, _ in JOB_BODIES])
async def test_bad_job_bodies(api: Api, case: str, body: Any) -> None:
    _assert_error(await api.http.post("/v1/jobs", json=body), 400)
    assert (await api.call("GET", "/v1/jobs"))["total"] == 0


@pytest.mark.parametrize(
    "raw",
    [b"{", b"{'name': 'x'}", b"", b"not json", b'{"name": "ok-name", "data": {}}}', b"\xff\xfe"],
)
async def test_malformed_json(api: Api, raw: bytes) -> None:
    response = await api.http.post(
        "/v1/jobs", content=raw, headers={"content-type": "application/json"}
    )
    _assert_error(response, 400)


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
async def test_non_finite_numbers_are_refused(api: Api, literal: bytes) -> None:
    raw = b'{"name": "ok-name", "data": {"x": ' + literal + b"}}"
    response = await api.http.post(
        "/v1/jobs", content=raw, headers={"content-type": "application/json"}
    )
    _assert_error(response, 400)


async def test_very_deep_nesting_is_refused(api: Api) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100):
        node["n"] = {}
        node = node["n"]
    _assert_error(await api.http.post("/v1/jobs", json={"name": "ok-name", "data": deep}), 400)


async def test_big_numbers_and_unicode_round_trip(api: Api) -> None:
    data = {
        "big": 2**70,
        "neg": -(2**63),
        "float": 1.5e300,
        "text": "שלום 🌍",
        "nested": [None, True],
    }
    job = await api.call("POST", "/v1/jobs", 201, json={"name": "ok-name", "data": data})
    assert (await api.job(job["id"]))["data"] == data


STAGE_BODIES: list[tuple[str, Any]] = [
    ("missing type", {"data": {}}),
    ("type too long", {"type": "t" * 51, "data": {}}),
    ("type empty", {"type": "", "data": {}}),
    ("missing data", {"type": "t"}),
    ("startAsWaiting wrong type", {"type": "t", "data": {}, "startAsWaiting": "yes"}),
    ("unknown field", {"type": "t", "data": {}, "order": 3}),
]


@pytest.mark.parametrize(("case", "body"), STAGE_BODIES, ids=[c for c, _ in STAGE_BODIES])
async def test_bad_stage_bodies(api: Api, case: str, body: Any) -> None:
    job = await api.create_job()
    _assert_error(await api.http.post(f"/v1/jobs/{job['id']}/stage", json=body), 400)
    assert await api.call("GET", f"/v1/jobs/{job['id']}/stages") == []


TASK_BODIES: list[tuple[str, Any]] = [
    ("empty list", []),
    ("not a list", {"data": {}}),
    ("maxAttempts 0", [{"data": {}, "maxAttempts": 0}]),
    ("maxAttempts negative", [{"data": {}, "maxAttempts": -1}]),
    ("maxAttempts string", [{"data": {}, "maxAttempts": "3"}]),
    ("maxAttempts float", [{"data": {}, "maxAttempts": 2.5}]),
    ("maxAttempts huge", [{"data": {}, "maxAttempts": 2**40}]),
    ("missing data", [{"maxAttempts": 2}]),
    ("unknown field", [{"data": {}, "status": "COMPLETED"}]),
    ("one bad among good", [{"data": {}}, {"data": 5}]),
]


@pytest.mark.parametrize(("case", "body"), TASK_BODIES, ids=[c for c, _ in TASK_BODIES])
async def test_bad_task_bodies_create_nothing(api: Api, case: str, body: Any) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    _assert_error(await api.http.post(f"/v1/stages/{stage['id']}/tasks", json=body), 400)
    assert (await api.stage(stage["id"]))["summary"]["total"] == 0


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", f"/v1/jobs/{BAD_UUID}", None),
        ("DELETE", f"/v1/jobs/{BAD_UUID}", None),
        ("PUT", f"/v1/jobs/{BAD_UUID}/status", {"status": "PAUSED"}),
        ("PATCH", f"/v1/jobs/{BAD_UUID}/priority", {"priority": "HIGH"}),
        ("PATCH", f"/v1/jobs/{BAD_UUID}/user-metadata", {}),
        ("GET", f"/v1/jobs/{BAD_UUID}/stages", None),
        ("POST", f"/v1/jobs/{BAD_UUID}/stage", {"type": "t", "data": {}}),
        ("GET", f"/v1/stages/{BAD_UUID}", None),
        ("GET", f"/v1/stages/{BAD_UUID}/summary", None),
        ("PUT", f"/v1/stages/{BAD_UUID}/status", {"status": "PENDING"}),
        ("GET", f"/v1/stages/{BAD_UUID}/tasks", None),
        ("POST", f"/v1/stages/{BAD_UUID}/tasks", [{"data": {}}]),
        ("GET", f"/v1/tasks/{BAD_UUID}", None),
        ("PUT", f"/v1/tasks/{BAD_UUID}/status", {"status": "COMPLETED"}),
        ("PATCH", f"/v1/tasks/{BAD_UUID}/user-metadata", {}),
        ("GET", f"/v1/stages?job_id={BAD_UUID}", None),
        ("GET", f"/v1/tasks?stage_id={BAD_UUID}", None),
    ],
)
async def test_bad_uuids(api: Api, method: str, path: str, body: Any) -> None:
    _assert_error(await api.http.request(method, path, json=body), 400)


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        ("GET", f"/v1/jobs/{UNKNOWN}", None, "JOB_NOT_FOUND"),
        ("PUT", f"/v1/jobs/{UNKNOWN}/status", {"status": "PAUSED"}, "JOB_NOT_FOUND"),
        ("PATCH", f"/v1/jobs/{UNKNOWN}/priority", {"priority": "HIGH"}, "JOB_NOT_FOUND"),
        ("PATCH", f"/v1/jobs/{UNKNOWN}/user-metadata", {}, "JOB_NOT_FOUND"),
        ("GET", f"/v1/jobs/{UNKNOWN}/stages", None, "JOB_NOT_FOUND"),
        ("POST", f"/v1/jobs/{UNKNOWN}/stage", {"type": "t", "data": {}}, "JOB_NOT_FOUND"),
        ("GET", f"/v1/stages/{UNKNOWN}", None, "STAGE_NOT_FOUND"),
        ("GET", f"/v1/stages/{UNKNOWN}/summary", None, "STAGE_NOT_FOUND"),
        ("PUT", f"/v1/stages/{UNKNOWN}/status", {"status": "PENDING"}, "STAGE_NOT_FOUND"),
        ("GET", f"/v1/stages/{UNKNOWN}/tasks", None, "STAGE_NOT_FOUND"),
        ("POST", f"/v1/stages/{UNKNOWN}/tasks", [{"data": {}}], "STAGE_NOT_FOUND"),
        ("PATCH", f"/v1/stages/{UNKNOWN}/user-metadata", {}, "STAGE_NOT_FOUND"),
        ("GET", f"/v1/tasks/{UNKNOWN}", None, "TASK_NOT_FOUND"),
        ("PUT", f"/v1/tasks/{UNKNOWN}/status", {"status": "COMPLETED"}, "TASK_NOT_FOUND"),
        ("PATCH", f"/v1/tasks/{UNKNOWN}/user-metadata", {}, "TASK_NOT_FOUND"),
    ],
)
async def test_unknown_ids_are_404(api: Api, method: str, path: str, body: Any, code: str) -> None:
    _assert_error(await api.http.request(method, path, json=body), 404, code)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/status", {"status": "COMPLETED"}),
        ("/status", {"status": "IN_PROGRESS"}),
        ("/status", {"status": "paused"}),
        ("/status", {}),
        ("/status", {"status": "PAUSED", "force": True}),
        ("/priority", {"priority": "URGENT"}),
        ("/priority", {}),
        ("/user-metadata", [1, 2]),
        ("/user-metadata", "text"),
    ],
)
async def test_bad_job_changes(api: Api, path: str, body: Any) -> None:
    job = await api.create_job()
    method = "PUT" if path == "/status" else "PATCH"
    _assert_error(await api.http.request(method, f"/v1/jobs/{job['id']}{path}", json=body), 400)
    got = await api.job(job["id"])
    assert (got["status"], got["priority"], got["userMetadata"]) == ("PENDING", "MEDIUM", {})


# ABORTED is taken too: it cancels the task (tests/integration/test_cancel_task.py).
@pytest.mark.parametrize("status", ["PENDING", "IN_PROGRESS", "RETRIED", "done"])
async def test_task_reports_accept_only_completed_or_failed(api: Api, status: str) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    await api.create_tasks(stage["id"])
    task = await api.dequeue(stage["type"])
    assert task is not None
    _assert_error(
        await api.http.put(f"/v1/tasks/{task['id']}/status", json={"status": status}), 400
    )
    assert (await api.task(task["id"]))["status"] == "IN_PROGRESS"


async def test_report_on_a_task_not_in_progress_is_illegal(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    task = (await api.create_tasks(stage["id"]))[0]
    response = await api.http.put(f"/v1/tasks/{task['id']}/status", json={"status": "COMPLETED"})
    _assert_error(response, 400, "ILLEGAL_TASK_STATUS_TRANSITION")
    assert response.json()["message"] == "Illegal status transition from PENDING to COMPLETED"


@pytest.mark.parametrize(
    "query",
    [
        "page=0",
        "page=-1",
        "page=abc",
        "page_size=0",
        "page_size=101",
        "priority=URGENT",
        "from_date=yesterday",
        "end_date=2025-13-45",
        "job_name=x",
        "should_return_stages=maybe",
    ],
)
async def test_bad_job_queries(api: Api, query: str) -> None:
    _assert_error(await api.http.get(f"/v1/jobs?{query}"), 400)


@pytest.mark.parametrize(
    "url",
    [
        "/v1/stages?stage_operation_status=DONE",
        "/v1/stages?page_size=1000",
        "/v1/tasks?status=SLEEPING",
        "/v1/tasks?from_date=not-a-date",
        f"/v1/stages/{'t' * 51}/tasks/dequeue",
    ],
)
async def test_bad_stage_and_task_queries(api: Api, url: str) -> None:
    method = "PATCH" if url.endswith("dequeue") else "GET"
    _assert_error(await api.http.request(method, url), 400)


async def test_illegal_stage_status_values(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    for status in ("WAITING", "COMPLETED", "IN_PROGRESS", None):
        response = await api.http.put(f"/v1/stages/{stage['id']}/status", json={"status": status})
        _assert_error(response, 400)
    assert (await api.stage(stage["id"]))["status"] == "PENDING"


async def test_adding_to_finished_or_running_parents(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    await api.create_tasks(stage["id"], 2)
    await api.dequeue(stage["type"])
    _assert_error(
        await api.http.post(f"/v1/stages/{stage['id']}/tasks", json=[{"data": {}}]),
        400,
        "NOT_ALLOWED_TO_ADD_TASKS_TO_IN_PROGRESS_STAGE",
    )
    await api.set_job_status(job["id"], "ABORTED")
    _assert_error(
        await api.http.post(f"/v1/stages/{stage['id']}/tasks", json=[{"data": {}}]),
        400,
        "STAGE_IN_FINITE_STATE",
    )
    _assert_error(
        await api.http.post(f"/v1/jobs/{job['id']}/stage", json={"type": "t", "data": {}}),
        400,
        "JOB_IN_FINITE_STATE",
    )


async def test_unknown_routes_and_methods(api: Api) -> None:
    _assert_error(await api.http.get("/v1/nothing-here"), 404, "NOT_FOUND")
    _assert_error(await api.http.delete("/v1/tasks"), 405, "METHOD_NOT_ALLOWED")
