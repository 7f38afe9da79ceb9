"""The request edge (api/edge.py), with authentication and metrics on: every reader of a
request (the authenticator, the guard, metrics, the fast routes and FastAPI's) takes its
body as parsed once and its route as matched once, and the workers' per-task calls
skip FastAPI's dependency solving; a body nested past any parser's depth, even one that
closes some levels on the way down, is a 400 wherever it is sent; and the guard will not
run without the edge outside it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import routing as fastapi_routing

from jobnik_manager.api import edge
from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role
from jobnik_manager.observe.http import RouteTemplates
from jobnik_manager.services import tokens
from jobnik_manager.settings import Settings

from ..support.api import unique


@pytest.fixture
async def client(db: Database) -> AsyncIterator[httpx.AsyncClient]:
    made = await db.transaction(lambda s: tokens.create(s, unique("edge"), Role.ADMIN))
    app = create_app(Settings(database_url=db.url, auth="on", metrics=True), database=db)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://manager",
        headers={"authorization": f"Bearer {made.token}"},
    ) as c:
        yield c


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often a request's body is parsed (by the edge, or by anyone with the standard
    library), its path matched to a template, and FastAPI solves a route's dependencies."""
    counted: Counter[str] = Counter()
    parse, match, loads = edge.parse, RouteTemplates.match, json.loads
    solve = fastapi_routing.solve_dependencies

    def counted_parse(body: bytes, *, max_values: int) -> Any:
        counted["parse"] += 1
        return parse(body, max_values=max_values)

    def counted_match(self: RouteTemplates, path: str) -> tuple[str, dict[str, str]]:
        counted["match"] += 1
        return match(self, path)

    def counted_loads(text: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(text, bytes):  # a body; what the stores hold is text
            counted["json.loads"] += 1
        return loads(text, *args, **kwargs)

    async def counted_solve(*args: Any, **kwargs: Any) -> Any:
        counted["solve"] += 1
        return await solve(*args, **kwargs)

    monkeypatch.setattr(edge, "parse", counted_parse)
    monkeypatch.setattr(RouteTemplates, "match", counted_match)
    monkeypatch.setattr(json, "loads", counted_loads)
    monkeypatch.setattr(fastapi_routing, "solve_dependencies", counted_solve)
    return counted


async def _send(
    client: httpx.AsyncClient, calls: Counter[str], method: str, path: str, body: Any = None
) -> tuple[httpx.Response, Counter[str]]:
    calls.clear()
    response = await client.request(method, path, json=body)
    return response, Counter(calls)


async def test_a_body_is_parsed_once_and_a_route_matched_once(
    client: httpx.AsyncClient, calls: Counter[str]
) -> None:
    stage_type = unique("edge")
    job_body = {
        "name": unique("job"),
        "data": {},
        "stages": [
            {"type": stage_type, "data": {}, "tasks": [{"data": {"n": i}} for i in range(3)]}
        ],
    }
    created, seen = await _send(client, calls, "POST", "/v1/jobs", job_body)
    assert created.status_code == 201, created.text
    assert (seen["parse"], seen["json.loads"], seen["match"]) == (1, 0, 1)

    claim = {"stageTypes": [stage_type], "limit": 3}
    claimed, seen = await _send(client, calls, "POST", "/v1/tasks/claim", claim)
    assert claimed.status_code == 200, claimed.text
    first, second, third = claimed.json()["items"]
    assert seen == Counter(parse=1, match=1)  # and no dependency solving

    beat = {"heartbeats": [{"taskId": first["id"], "leaseId": first["leaseId"]}]}
    beaten, seen = await _send(client, calls, "POST", "/v1/tasks/heartbeats", beat)
    assert beaten.status_code == 200, beaten.text
    assert (seen["parse"], seen["json.loads"], seen["match"]) == (1, 0, 1)

    done = {"status": "COMPLETED", "leaseId": first["leaseId"]}
    reported, seen = await _send(client, calls, "PUT", f"/v1/tasks/{first['id']}/status", done)
    assert reported.status_code == 200, reported.text
    assert seen == Counter(parse=1, match=1)

    reports = {
        "reports": [
            {"taskId": t["id"], "status": "COMPLETED", "leaseId": t["leaseId"]}
            for t in (second, third)
        ]
    }
    settled, seen = await _send(client, calls, "POST", "/v1/tasks/reports", reports)
    assert settled.status_code == 200, settled.text
    assert [item["task"]["status"] for item in settled.json()["items"]] == ["COMPLETED"] * 2
    assert seen == Counter(parse=1, match=1)

    empty, seen = await _send(client, calls, "PATCH", f"/v1/stages/{stage_type}/tasks/dequeue")
    assert empty.status_code == 404 and set(empty.json()) == {"message", "code"}
    assert seen == Counter(match=1)

    read, seen = await _send(client, calls, "GET", f"/v1/jobs/{created.json()['id']}")
    assert read.status_code == 200 and read.json()["status"] == "COMPLETED"
    assert (seen["parse"], seen["json.loads"], seen["match"]) == (0, 0, 1)


# Valid JSON nested 3,000 levels deep without ever opening more than two in a row.
DEEP = b'{"stageTypes": ' + b"[[]," * 3000 + b"0" + b"]" * 3000 + b"}"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/tasks/claim"),  # read by the authenticator for its rule
        ("PUT", "/v1/tasks/00000000-0000-4000-8000-000000000001/status"),
        ("POST", "/v1/jobs"),
        ("POST", "/v1/tasks/heartbeats"),
    ],
)
async def test_deep_nesting_is_a_400_wherever_it_is_sent(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    headers = {"content-type": "application/json"}
    response = await client.request(method, path, content=DEEP, headers=headers)
    assert response.status_code == 400, response.text
    assert response.json() == {
        "message": "body: nested deeper than 80 levels",
        "code": "VALIDATION_ERROR",
    }


async def test_the_guard_will_not_run_without_the_edge(db: Database) -> None:
    app = create_app(Settings(database_url=db.url), database=db)
    app.user_middleware = [m for m in app.user_middleware if m.cls is not edge.RequestEdge]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as c:
        with pytest.raises(LookupError, match="no request edge"):
            await c.post("/v1/tasks/claim", json={"stageTypes": ["x"]})
