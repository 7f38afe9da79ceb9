"""Calls written straight onto the SDK's transport (jobnik_sdk/_direct.py) against the
same calls through httpx's client, on a scripted server: the same request reaches the
manager either way, and the answer, its errors and retries come back the same."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
import pytest

from jobnik_sdk import Backoff, JobnikTransportError, NotFoundError
from jobnik_sdk._http import Http
from jobnik_sdk._retry import RequestRetryPolicy

from ..support.processes import free_port
from ..support.scripted_http import Server, answer, scripted

QUICK = Backoff(initial=timedelta(milliseconds=10), maximum=timedelta(milliseconds=20))


def http_to(base: str, *, token: str | None = "s3cret", direct: bool = True) -> Http:
    http = Http(
        base,
        transport=None,
        timeout=timedelta(seconds=5),
        retry=RequestRetryPolicy(max_attempts=3, backoff=QUICK),
        headers={"X-Team": "maps"},
        auto_idempotency_keys=True,
        token=token,
    )
    if not direct:
        http._direct = None  # every call through httpx's client
    return http


def as_sent(
    head: bytes, body: bytes
) -> tuple[str, str, list[tuple[str, str]], dict[str, str], bytes]:
    """A request as the manager reads it: method, decoded path, query pairs, headers by
    lower-case name, body."""
    request_line, *lines = head.decode().split("\r\n")
    method, target, _ = request_line.split(" ")
    url = urlsplit(target)
    headers = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, unquote(url.path), parse_qsl(url.query), headers, body


async def echo(server: Server, head: bytes, body: bytes, writer: asyncio.StreamWriter) -> bool:
    writer.write(answer(json.dumps({"n": len(server.requests)}).encode()))
    return True


CALLS: list[tuple[str, str, dict[str, object]]] = [
    (
        "POST",
        "/v1/jobs",
        {
            "json": {"name": "tiles ü", "tasks": [{"data": {"z": 1.5, "ok": True, "n": None}}]},
            "params": {
                "returnTasks": False,
                "types": ["a", "b c"],
                "since": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            },
            "idempotency_key": "key-1",
        },
    ),
    (
        "GET",
        "/v1/jobs/0195a3c4-aaaa-7bbb-8ccc-000000000001",
        {"params": {"shouldReturnStages": True}},
    ),
    ("PUT", "/v1/tasks/t-1/status", {"json": {"status": "COMPLETED"}}),
    (
        "PATCH",
        "/v1/stages/tile-render/tasks/dequeue",
        {"params": {"worker": "w 1&2"}, "claims": True},
    ),
    ("POST", "/v1/jobs/j-1/abort", {}),
    ("DELETE", "/v1/jobs/j-1", {}),
    # Not written by hand: a path the client escapes.
    ("GET", "/v1/stages/a type/summary", {}),
]


@pytest.mark.parametrize("prefix", ["", "/api/jobnik"])
async def test_each_call_reaches_the_manager_as_httpx_would_send_it(prefix: str) -> None:
    async with scripted(echo) as server:
        sent: dict[bool, list[tuple[object, ...]]] = {}
        for direct in (True, False):
            http = http_to(server.base + prefix, direct=direct)
            assert (http._direct is not None) is direct
            try:
                for method, path, options in CALLS:
                    response = await http.request(method, path, **options)  # type: ignore[arg-type]
                    assert response.status_code == 200
                    assert response.json() == {"n": len(server.requests)}
            finally:
                await http.aclose()
            sent[direct] = [as_sent(*request) for request in server.requests]
            server.requests.clear()
    assert sent[True] == sent[False]
    first = sent[True][0]
    assert first[1] == f"{prefix}/v1/jobs"
    headers = first[3]
    assert isinstance(headers, dict)
    assert headers["authorization"] == "Bearer s3cret"
    assert headers["idempotency-key"] == "key-1" and headers["x-team"] == "maps"
    assert headers["host"] == server.base.removeprefix("http://")


async def test_calls_written_by_hand_share_the_clients_connections() -> None:
    async with scripted(echo) as server:
        http = http_to(server.base)
        try:
            for _ in range(3):
                await http.request("GET", "/v1/jobs")
            await http.request("GET", "/v1/stages/a type")  # through the client
            await http.request("GET", "/v1/jobs")
        finally:
            await http.aclose()
    assert server.connections == 1


async def test_an_error_answer_and_a_retry_come_back_as_through_the_client() -> None:
    async def flaky(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        if len(server.requests) % 3 == 1:
            w.write(
                answer(
                    b'{"message": "starting", "code": "UNAVAILABLE"}',
                    status="503 Service Unavailable",
                )
            )
        elif len(server.requests) % 3 == 2:
            w.write(answer(b'{"ok": true}'))
        else:
            w.write(
                answer(
                    b'{"message": "no such job", "code": "JOB_NOT_FOUND"}', status="404 Not Found"
                )
            )
        return True

    for direct in (True, False):
        async with scripted(flaky) as server:
            http = http_to(server.base, direct=direct)
            try:
                assert (await http.request("GET", "/v1/jobs/x")).json() == {"ok": True}
                with pytest.raises(NotFoundError) as raised:
                    await http.request("GET", "/v1/jobs/x")
            finally:
                await http.aclose()
        assert raised.value.code == "JOB_NOT_FOUND" and raised.value.status_code == 404
        assert len(server.requests) == 3


async def test_a_claim_that_may_have_arrived_is_not_sent_again() -> None:
    async def hang_up(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        return False  # read, then closed unanswered

    async with scripted(hang_up) as server:
        http = http_to(server.base)
        try:
            with pytest.raises(JobnikTransportError):
                await http.request(
                    "POST", "/v1/tasks/claim", json={"stageTypes": ["t"]}, claims=True
                )
        finally:
            await http.aclose()
    assert len(server.requests) == 1


async def test_nothing_listening_is_a_transport_error_after_the_retries() -> None:
    http = http_to(f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(JobnikTransportError, match="ConnectError"):
            await http.request("GET", "/v1/jobs")
    finally:
        await http.aclose()


async def test_a_cookie_the_manager_sets_is_sent_back_from_then_on() -> None:
    async def sets_cookie(
        server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter
    ) -> bool:
        if len(server.requests) == 1:
            w.write(
                b"HTTP/1.1 200 OK\r\nSet-Cookie: route=r2; Path=/\r\nContent-Length: 2\r\n\r\n{}"
            )
        else:
            w.write(answer(b"{}"))
        return True

    async with scripted(sets_cookie) as server:
        http = http_to(server.base)
        try:
            for _ in range(3):
                await http.request("GET", "/v1/jobs")
        finally:
            await http.aclose()
    cookies = [as_sent(*request)[3].get("cookie") for request in server.requests]
    assert cookies == [None, "route=r2", "route=r2"]


async def test_a_transport_wrapped_by_instrumentation_sees_every_call() -> None:
    async with scripted(echo) as server:
        http = http_to(server.base)
        transport = http._client._transport
        seen: list[str] = []
        unwrapped = transport.handle_async_request

        async def traced(request: httpx.Request) -> httpx.Response:
            seen.append(request.url.path)  # as an instrumentor's wrapper would
            return await unwrapped(request)

        transport.handle_async_request = traced  # type: ignore[method-assign]
        try:
            await http.request("GET", "/v1/jobs")
            await http.request("POST", "/v1/tasks/claim", json={}, claims=True)
        finally:
            await http.aclose()
    assert seen == ["/v1/jobs", "/v1/tasks/claim"]
