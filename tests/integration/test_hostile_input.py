"""Hostile input: text that cannot be stored (NUL, lone surrogates) wherever a request
carries text, bodies too deep, too large or holding too much, and wrong types. Each is
answered with its documented 4xx `{message, code}` naming where the trouble is, nothing
of it is stored, and the manager goes on answering, on both backends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Stage, Task
from jobnik_manager.settings import Settings

from ..support.api import Api
from ..support.apps import app_on

SURROGATE = "\\udfff"  # as JSON spells it: a lone (low) surrogate
NUL = "\\u0000"
ANY_ID = "8d3f6a52-5ad9-4b36-bb4a-07a3b0a1d1e2"

# Small limits, so that going past each takes a small request.
LIMITS = {
    "max_body_bytes": 128 * 1024,
    "max_body_values": 20_000,
    "max_tasks_per_call": 3_000,
    "max_inline_tasks": 5,
}


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # {stage}, {job}, {task}: ids of a stage (PENDING), its job and a task
    body: str | bytes | None = None
    status: int = 400
    code: str = "VALIDATION_ERROR"
    says: str = ""  # what the message must contain (the field's location)
    headers: dict[str, str] = field(default_factory=dict)


def too_large(name: str, path: str, body: str, says: str) -> Case:
    """A POST refused for its size: 413 PAYLOAD_TOO_LARGE."""
    return Case(name, "POST", path, body, status=413, code="PAYLOAD_TOO_LARGE", says=says)


def job(data: str = "{}", **fields: str) -> str:
    extra = "".join(f', "{k}": {v}' for k, v in fields.items())
    return f'{{"name": "ok-name", "data": {data}{extra}}}'


CASES = [
    # Lone surrogates and NUL in a JSON body: values and keys, at any depth.
    Case("surrogate in data", "POST", "/v1/jobs", job(f'{{"k": "{SURROGATE}"}}'), says="data.k"),
    Case("surrogate in a data key", "POST", "/v1/jobs", job(f'{{"{SURROGATE}": 1}}'), says="data:"),
    Case(
        "surrogate in userMetadata",
        "POST",
        "/v1/jobs",
        job(userMetadata=f'{{"who": "a{SURROGATE}b"}}'),
        says="userMetadata.who",
    ),
    Case("lone high surrogate", "POST", "/v1/jobs", job('{"k": "\\ud800x"}'), says="data.k"),
    Case("surrogates reversed", "POST", "/v1/jobs", job('{"k": "\\udc00\\ud800"}'), says="data.k"),
    Case("NUL in data", "POST", "/v1/jobs", job(f'{{"k": "{NUL}"}}'), says="data.k"),
    Case(
        "NUL deep in data",
        "POST",
        "/v1/jobs",
        job(f'{{"a": {{"b": [1, {{"c{NUL}": 2}}]}}}}'),
        says="data.a.b.1:",
    ),
    Case("NUL in name", "POST", "/v1/jobs", f'{{"name": "ab{NUL}cd", "data": {{}}}}', says="name"),
    Case("NUL in tracestate", "POST", "/v1/jobs", job(tracestate=f'"a=b{NUL}"'), says="tracestate"),
    Case(
        "surrogate in a stage type",
        "POST",
        "/v1/jobs",
        job(stages=f'[{{"type": "t{SURROGATE}", "data": {{}}}}]'),
        says="stages.0.type",
    ),
    Case(
        "surrogate in a task of a job",
        "POST",
        "/v1/jobs",
        job(
            stages=f'[{{"type": "t", "data": {{}}, "tasks": [{{"data": {{"k": "{SURROGATE}"}}}}]}}]'
        ),
        says="stages.0.tasks.0.data.k",
    ),
    Case(
        "NUL in a new stage",
        "POST",
        "/v1/jobs/{job}/stage",
        f'{{"type": "t", "data": {{"x": "{NUL}"}}}}',
        says="data.x",
    ),
    Case(
        "surrogate in added tasks",
        "POST",
        "/v1/stages/{stage}/tasks",
        f'[{{"data": {{}}}}, {{"data": {{}}, "userMetadata": {{"k": "{SURROGATE}"}}}}]',
        says="1.userMetadata.k",
    ),
    Case(
        "surrogate in job metadata",
        "PATCH",
        "/v1/jobs/{job}/user-metadata",
        f'{{"k": ["{SURROGATE}"]}}',
        says="k.0",
    ),
    Case("NUL in stage metadata", "PATCH", "/v1/stages/{stage}/user-metadata", f'{{"k": "{NUL}"}}'),
    Case(
        "NUL in a report's reason",
        "PUT",
        "/v1/tasks/{task}/status",
        f'{{"status": "FAILED", "reason": "x{NUL}"}}',
        says="reason",
    ),
    Case(
        "surrogate in a report's result",
        "POST",
        "/v1/tasks/reports",
        f'{{"reports": [{{"taskId": "{ANY_ID}", "status": "COMPLETED", '
        f'"result": {{"k": "{SURROGATE}"}}}}]}}',
        says="reports.0.result.k",
    ),
    Case(
        "surrogate in a claim's stage type",
        "POST",
        "/v1/tasks/claim",
        f'{{"stageTypes": ["{SURROGATE}"]}}',
        says="stageTypes.0",
    ),
    Case(
        "NUL in a heartbeat",
        "POST",
        "/v1/tasks/{task}/heartbeat",
        f'{{"leaseId": "{ANY_ID}{NUL}"}}',
        says="leaseId",
    ),
    # The same as bytes rather than escapes, and bytes that are no UTF-8 at all.
    Case("UTF-8 encoded surrogate", "POST", "/v1/jobs", job('"\xed\xbf\xbf"').encode("latin-1")),
    Case("invalid UTF-8", "POST", "/v1/jobs", job('"\xff\xfe"').encode("latin-1"), says="UTF-8"),
    Case("raw NUL byte", "POST", "/v1/jobs", job('"a\x00b"').encode(), says="NUL"),
    Case("UTF-16 body", "POST", "/v1/jobs", job().encode("utf-16"), says="body"),
    # Query values, path segments and headers.
    Case("NUL in a query value", "GET", "/v1/jobs?job_name=ab%00cd", says="job_name"),
    Case("NUL in a task query", "GET", "/v1/tasks?stage_type=t%00", says="stage_type"),
    Case("NUL in a path segment", "PATCH", "/v1/stages/t%00t/tasks/dequeue", says="path"),
    Case("NUL in an id segment", "GET", "/v1/jobs/%00", says="path"),
    Case(
        "NUL in tracestate", "GET", "/v1/jobs", headers={"tracestate": "a=\x00"}, says="tracestate"
    ),
    Case("NUL in traceparent", "POST", "/v1/jobs", job(), headers={"traceparent": "00\x00"}),
    Case(
        "NUL in an idempotency key",
        "POST",
        "/v1/jobs",
        job(),
        headers={"Idempotency-Key": "k\x00"},
        says="idempotency-key",
    ),
    # Nesting: refused before it is parsed.
    Case("deep body", "POST", "/v1/jobs", job("[" * 500 + "]" * 500), says="nested deeper"),
    Case("deep claim", "POST", "/v1/tasks/claim", "[" * 5000 + "]" * 5000, says="nested deeper"),
    Case(
        "deep report",
        "PUT",
        "/v1/tasks/{task}/status",
        '{"status": "COMPLETED", "result": ' + '{"a": ' * 200 + "1" + "}" * 201,
        says="nested deeper",
    ),
    Case("deep data", "POST", "/v1/jobs", job('{"a": ' * 70 + "1" + "}" * 70), says="data"),
    # Nesting that closes some levels on the way down: refused by the parser.
    Case("deep, closing on the way", "POST", "/v1/jobs", job("[[]," * 3000 + "1" + "]" * 3000)),
    Case("deep claim, closing on the way", "POST", "/v1/tasks/claim", "[[]," * 3000 + "]" * 3000),
    # Wrong types.
    Case("name a number", "POST", "/v1/jobs", '{"name": 12, "data": {}}', says="name"),
    Case("data a string", "POST", "/v1/jobs", '{"name": "ok-name", "data": "x"}', says="data"),
    Case("stages an object", "POST", "/v1/jobs", job(stages="{}"), says="stages"),
    Case("tasks an object", "POST", "/v1/stages/{stage}/tasks", '{"data": {}}'),
    Case(
        "maxAttempts a string",
        "POST",
        "/v1/stages/{stage}/tasks",
        '[{"data": {}, "maxAttempts": "3"}]',
        says="0.maxAttempts",
    ),
    Case("status a number", "PUT", "/v1/jobs/{job}/status", '{"status": 1}', says="status"),
    Case("limit a string", "POST", "/v1/tasks/claim", '{"stageTypes": ["t"], "limit": "5"}'),
    Case("page a string", "GET", "/v1/jobs?page=x", says="page"),
    # Pages are bounded.
    Case("page too large", "GET", "/v1/tasks?page_size=101", says="page_size"),
    Case("events page too large", "GET", "/v1/jobs/{job}/events?page_size=1001", says="page_size"),
    # Size: a body larger than the limit, JSON holding too many values, too many tasks.
    too_large("body too large", "/v1/jobs", job(f'"{"x" * 140_000}"'), "131,072 bytes"),
    too_large(
        "too many values",
        "/v1/jobs",
        job("[" + "0," * 25_000 + "0]"),
        "20,000 JSON values",
    ),
    too_large(
        "too many tasks in a job",
        "/v1/jobs",
        job(
            stages="["
            + ", ".join(
                '{"type": "t", "data": {}, "tasks": [' + "{}," * 1_999 + "{}]}" for _ in "ab"
            )
            + "]"
        ),
        "POST /v1/stages/{stageId}/tasks",
    ),
    too_large(
        "too many tasks in a stage",
        "/v1/jobs/{job}/stage",
        '{"type": "t", "data": {}, "tasks": [' + "{}," * 3_000 + "{}]}",
        "3,001 tasks",
    ),
    too_large(
        "too many tasks added",
        "/v1/stages/{stage}/tasks",
        "[" + "{}," * 3_000 + "{}]",
        "3,001 tasks",
    ),
    Case(
        "many tasks, one invalid late",
        "POST",
        "/v1/stages/{stage}/tasks",
        "[" + '{"data": {}},' * 2_900 + '{"data": 5}]',
        says="2900.data",
    ),
]


@pytest.fixture
async def guarded(db: Database) -> AsyncIterator[Api]:
    """The app with small limits."""
    with app_on(db, Settings(database_url=db.url, **LIMITS)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://manager") as client:
            yield Api(client)


async def counts(db: Database) -> dict[str, int]:
    async with db.sessions() as s:
        return {
            model.__name__: (await s.execute(select(func.count()).select_from(model))).scalar_one()
            for model in (Job, Stage, Task, Event)
        }


def assert_error(response: httpx.Response, case: Case) -> None:
    assert response.status_code == case.status, response.text
    body = response.json()
    assert set(body) == {"message", "code"}, body
    assert body["code"] == case.code, body
    assert case.says.lower() in body["message"].lower(), body


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_hostile_input_is_refused_and_nothing_is_stored(
    guarded: Api, db: Database, case: Case
) -> None:
    job_ = await guarded.create_job()
    stage = await guarded.create_stage(job_["id"], "t")
    [task] = await guarded.create_tasks(stage["id"])
    before = await counts(db)
    path = case.path.format(job=job_["id"], stage=stage["id"], task=task["id"])
    content = case.body.encode() if isinstance(case.body, str) else case.body
    headers = {"content-type": "application/json"} if content is not None else {}
    response = await guarded.http.request(
        case.method, path, content=content, headers={**headers, **case.headers}
    )
    assert_error(response, case)
    assert await counts(db) == before
    # Still answering, and what is stored still reads back.
    assert (await guarded.http.get("/liveness")).status_code == 200
    assert (await guarded.job(job_["id"], should_return_stages="true"))["stages"]
    assert (await guarded.call("GET", "/v1/tasks"))["total"] == 1


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def test_a_streamed_body_is_cut_off_at_the_limit(guarded: Api, db: Database) -> None:
    """No Content-Length to go by: the bytes are counted as they come."""
    body = job(f'"{"x" * 300_000}"').encode()
    response = await guarded.http.post(
        "/v1/jobs", content=_chunks(body, 8192), headers={"content-type": "application/json"}
    )
    assert_error(response, Case("", "", "", status=413, code="PAYLOAD_TOO_LARGE", says="bytes"))
    assert (await counts(db))["Job"] == 0


@pytest.mark.parametrize(
    "text",
    [
        "\\ud83c\\udf0d",  # a surrogate pair: one character
        "\\\\u0000",  # an escaped backslash, then the text u0000
        "\\\\\\ud83c\\udf0d",  # an escaped backslash, then a pair
        "\\u00e9\\u05e9",  # other escapes
    ],
)
async def test_text_that_only_looks_hostile_is_stored(guarded: Api, text: str) -> None:
    raw = job(f'{{"k": "{text}", "{text}": 1}}').encode()
    created = await guarded.call(
        "POST", "/v1/jobs", 201, content=raw, headers={"content-type": "application/json"}
    )
    expected = json.loads(f'"{text}"')
    stored = (await guarded.job(created["id"]))["data"]
    assert stored == {"k": expected, expected: 1}


async def test_up_to_the_limits_is_accepted(guarded: Api) -> None:
    """As many tasks as a call may create, in slices, answered in the request's order."""
    tasks = [{"data": {"i": i}} for i in range(LIMITS["max_tasks_per_call"])]
    job_ = await guarded.create_job()
    stage = await guarded.create_stage(job_["id"], "t")
    created = await guarded.call("POST", f"/v1/stages/{stage['id']}/tasks", 201, json=tasks)
    assert [t["data"]["i"] for t in created] == list(range(len(tasks)))
    assert (await guarded.stage(stage["id"]))["summary"]["total"] == len(tasks)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/stages/{stage}?should_return_tasks=true",
        "/v1/jobs/{job}/stages?should_return_tasks=true",
        "/v1/stages?should_return_tasks=true&job_id={job}",
    ],
)
async def test_tasks_answered_inline_are_bounded(guarded: Api, path: str) -> None:
    """Up to the limit, a read answers its stages' tasks with them; past it, 413, and
    the tasks are read a page at a time."""
    job_ = await guarded.create_job()
    stage = await guarded.create_stage(job_["id"], "t")
    await guarded.create_tasks(stage["id"], LIMITS["max_inline_tasks"])
    url = path.format(job=job_["id"], stage=stage["id"])
    answer = await guarded.call("GET", url)
    stages = answer if isinstance(answer, list) else answer.get("items", [answer])
    assert len(stages[0]["tasks"]) == LIMITS["max_inline_tasks"]
    await guarded.create_tasks(stage["id"])
    response = await guarded.http.get(url)
    assert_error(
        response,
        Case("", "", "", status=413, code="PAYLOAD_TOO_LARGE", says="/v1/stages/{stageId}/tasks"),
    )
    page = await guarded.call("GET", f"/v1/stages/{stage['id']}/tasks", params={"page_size": 100})
    assert page["total"] == LIMITS["max_inline_tasks"] + 1
