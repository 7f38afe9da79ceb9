"""Which failures the client sends again, against a small scripted ASGI server (run
in-process through httpx.ASGITransport) and a port where nothing listens."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings
from jobnik_sdk import (
    ApiError,
    Backoff,
    ConflictError,
    JobnikClient,
    JobnikTransportError,
    JobnikValidationError,
    LeaseLostError,
    NewStage,
    NewTask,
    NotFoundError,
    RequestRetryPolicy,
    TaskReport,
)
from jobnik_sdk._retry import Replay, replay_for, should_retry

from ..support.api import unique
from ..support.processes import free_port

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

NOW = datetime.now(UTC).isoformat()
JOB = {
    "id": str(uuid.uuid4()),
    "name": "scripted",
    "data": {},
    "userMetadata": {},
    "priority": "MEDIUM",
    "status": "PENDING",
    "percentage": 0,
    "creationTime": NOW,
    "updateTime": NOW,
    "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01",
}
TASK = {
    "id": str(uuid.uuid4()),
    "stageId": str(uuid.uuid4()),
    "data": {},
    "userMetadata": {},
    "status": "IN_PROGRESS",
    "attempts": 0,
    "maxAttempts": 1,
    "creationTime": NOW,
    "updateTime": NOW,
}
FAST = RequestRetryPolicy(
    max_attempts=4,
    backoff=Backoff(initial=timedelta(milliseconds=1), maximum=timedelta(milliseconds=5)),
)


class ScriptedManager:
    """An ASGI app that answers with the statuses in `script` in turn, then 200 with
    `body`, and records every request it receives."""

    def __init__(self, script: list[int], body: Any, error: Any = None) -> None:
        self.script = list(script)
        self.body = body
        self.error = error
        self.requests: list[httpx.Headers] = []
        self.methods: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        while (await receive()).get("more_body"):
            pass
        self.methods.append(scope["method"])
        self.requests.append(httpx.Headers([(k.decode(), v.decode()) for k, v in scope["headers"]]))
        status = self.script.pop(0) if self.script else 200
        error = self.error or {"message": f"scripted {status}", "code": f"SCRIPTED_{status}"}
        body = self.body if status < 400 else error
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})

    @property
    def count(self) -> int:
        return len(self.requests)


class FailFirst(httpx.AsyncBaseTransport):
    """Raises `error` for the first `times` requests, then hands over to `inner`."""

    def __init__(self, inner: httpx.AsyncBaseTransport, error: type[Exception], times: int):
        self.inner, self.error, self.times = inner, error, times
        self.raised = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.raised < self.times:
            self.raised += 1
            raise self.error("scripted transport failure", request=request)  # type: ignore[call-arg]
        return await self.inner.handle_async_request(request)


def client_for(
    transport: httpx.AsyncBaseTransport,
    *,
    retry: RequestRetryPolicy = FAST,
    auto_keys: bool = False,
) -> JobnikClient:
    return JobnikClient(
        "http://scripted", transport=transport, retry=retry, auto_idempotency_keys=auto_keys
    )


def on(server: ScriptedManager) -> httpx.ASGITransport:
    return httpx.ASGITransport(app=server)


def _get_job(client: JobnikClient) -> Awaitable[Any]:
    return client.get_job(JOB["id"])


def _complete(client: JobnikClient) -> Awaitable[Any]:
    return client.complete(TASK["id"])


@pytest.mark.parametrize(
    ("script", "call", "answer", "method"),
    [
        pytest.param([503, 503], _get_job, JOB, "GET", id="get-503-twice"),
        pytest.param([502, 504], _complete, TASK, "PUT", id="report-502-then-504"),
    ],
)
async def test_unavailable_answers_are_retried_until_one_comes_through(
    script: list[int],
    call: Callable[[JobnikClient], Awaitable[Any]],
    answer: dict[str, Any],
    method: str,
) -> None:
    server = ScriptedManager(script, answer)
    async with client_for(on(server)) as client:
        got = await call(client)
    assert str(got.id) == answer["id"]
    assert server.methods == [method] * 3


async def test_retries_are_bounded() -> None:
    server = ScriptedManager([503] * 10, JOB)
    async with client_for(on(server)) as client:
        with pytest.raises(ApiError) as failed:
            await client.get_job(JOB["id"])
    assert failed.value.status_code == 503
    assert server.count == FAST.max_attempts


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, ApiError), (404, NotFoundError), (409, ConflictError), (500, ApiError), (501, ApiError)],
)
async def test_other_errors_are_not_retried(status: int, error: type[ApiError]) -> None:
    server = ScriptedManager([status], JOB)
    async with client_for(on(server)) as client:
        with pytest.raises(error) as failed:
            await client.get_job(JOB["id"])
    assert type(failed.value) is error and failed.value.status_code == status
    assert server.count == 1


async def test_a_400_is_not_retried_even_on_a_post_with_a_key() -> None:
    server = ScriptedManager(
        [400, 503], JOB, error={"message": "name: too short", "code": "VALIDATION_ERROR"}
    )
    async with client_for(on(server)) as client:
        with pytest.raises(JobnikValidationError) as failed:
            await client.create_job("x", idempotency_key="k")
    assert (failed.value.code, failed.value.message) == ("VALIDATION_ERROR", "name: too short")
    assert server.count == 1


async def test_a_post_without_an_idempotency_key_is_not_retried() -> None:
    server = ScriptedManager([503], JOB)
    async with client_for(on(server)) as client:
        with pytest.raises(ApiError) as failed:
            await client.create_job("no-key")
    assert failed.value.status_code == 503
    assert server.count == 1
    assert "idempotency-key" not in server.requests[0]


async def test_a_post_with_an_idempotency_key_is_retried_with_the_same_key() -> None:
    server = ScriptedManager([503, 503], [TASK])
    async with client_for(on(server)) as client:
        tasks = await client.add_tasks(uuid.uuid4(), [NewTask()], idempotency_key="batch-7")
    assert len(tasks) == 1
    assert [r["idempotency-key"] for r in server.requests] == ["batch-7"] * 3


async def test_automatic_idempotency_keys_make_creates_retryable() -> None:
    server = ScriptedManager([503], JOB)
    async with client_for(on(server), auto_keys=True) as client:
        await client.create_job("auto-key")
    keys = [r["idempotency-key"] for r in server.requests]
    assert len(keys) == 2 and keys[0] == keys[1] and uuid.UUID(keys[0])


async def test_every_create_carries_its_own_key_by_default() -> None:
    server = ScriptedManager([503, 200, 503], JOB)
    async with JobnikClient("http://scripted", transport=on(server), retry=FAST) as client:
        await client.create_job("first")
        await client.create_job("second")
    keys = [r["idempotency-key"] for r in server.requests]
    assert len(keys) == 4
    assert keys[0] == keys[1] and keys[2] == keys[3], "one key across a call's retries"
    assert keys[1] != keys[2], "a fresh key per call"


class LoseFirstAnswer(httpx.AsyncBaseTransport):
    """Delivers every request, but answers the first with a 503 in place of the
    manager's answer, as a proxy that lost it would."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.sent = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        response = await self.inner.handle_async_request(request)
        if self.sent > 1:
            return response
        await response.aread()
        return httpx.Response(503, json={"message": "lost", "code": "HTTP_503"})


async def test_a_create_whose_answer_was_lost_is_retried_and_answers_the_same_job(
    db: Database,
) -> None:
    app = create_app(Settings(database_url=db.url), database=db)
    transport = LoseFirstAnswer(httpx.ASGITransport(app=app))
    name = unique("lost-answer")
    async with JobnikClient("http://manager", transport=transport, retry=FAST) as client:
        job = await client.create_job(name, stages=[NewStage(type=unique("k"), tasks=[NewTask()])])
        assert transport.sent == 2
        jobs = await client.list_jobs(name=name)
    assert [j.id for j in jobs.items] == [job.id], "created once"
    assert job.stages is not None and job.stages[0].tasks is not None


async def test_heartbeats_and_batch_reports_repeat_but_claims_do_not() -> None:
    beat = {"leaseExpiresAt": NOW, "cancelRequested": False, "jobStatus": "IN_PROGRESS"}
    server = ScriptedManager([503], beat)
    async with client_for(on(server)) as client:
        answer = await client.heartbeat(TASK["id"], uuid.uuid4(), progress=5)
    assert server.count == 2 and not answer.cancel_requested

    reports = ScriptedManager([502], {"items": [{"taskId": TASK["id"], "task": TASK}]})
    async with client_for(on(reports)) as client:
        outcomes = await client.report_many([TaskReport.completed(TASK["id"])])
    assert reports.count == 2 and outcomes[0].ok

    claims = ScriptedManager([503], {"items": [TASK]})
    async with client_for(on(claims)) as client:
        with pytest.raises(ApiError):
            await client.claim(["tiles"], limit=3)
    assert claims.count == 1


async def test_lease_lost_maps_to_its_own_error() -> None:
    server = ScriptedManager([409], TASK, error={"message": "gone", "code": "LEASE_LOST"})
    async with client_for(on(server)) as client:
        with pytest.raises(LeaseLostError) as lost:
            await client.complete(TASK["id"], lease_id=uuid.uuid4())
    assert isinstance(lost.value, ConflictError) and lost.value.status_code == 409
    assert server.count == 1


async def test_dequeue_is_not_retried_once_it_may_have_reached_the_server() -> None:
    server = ScriptedManager([503], TASK)
    async with client_for(on(server)) as client:
        with pytest.raises(ApiError):
            await client.dequeue("tiles")
    assert server.count == 1


def _dequeue(client: JobnikClient) -> Awaitable[Any]:
    return client.dequeue("tiles")


def _create(client: JobnikClient) -> Awaitable[Any]:
    return client.create_job("created")  # no idempotency key


@pytest.mark.parametrize(
    ("call", "answer", "error", "times", "repeated"),
    [
        pytest.param(_dequeue, TASK, httpx.ReadTimeout, 1, False, id="dequeue-read-timeout"),
        pytest.param(_dequeue, TASK, httpx.ConnectError, 2, True, id="dequeue-connect-error"),
        pytest.param(_create, JOB, httpx.ReadTimeout, 1, False, id="unkeyed-post-read-timeout"),
        pytest.param(_create, JOB, httpx.ConnectError, 1, True, id="unkeyed-post-connect-error"),
        pytest.param(_get_job, JOB, httpx.ReadTimeout, 2, True, id="get-read-timeout"),
    ],
)
async def test_transport_failures_are_repeated_only_where_it_is_safe(
    call: Callable[[JobnikClient], Awaitable[Any]],
    answer: dict[str, Any],
    error: type[httpx.TransportError],
    times: int,
    repeated: bool,
) -> None:
    """A request that never reached the server (a connect error) may always go again; one
    that may have (a read timeout) only if repeating it is harmless: not a dequeue, which
    would claim another task, nor a POST without an idempotency key."""
    server = ScriptedManager([], answer)
    transport = FailFirst(on(server), error, times=times)
    async with client_for(transport) as client:
        if repeated:
            got = await call(client)
            assert str(got.id) == answer["id"]
        else:
            with pytest.raises(JobnikTransportError) as failed:
                await call(client)
            assert isinstance(failed.value.__cause__, error)
    assert (transport.raised, server.count) == (times, 1 if repeated else 0)


async def test_an_unreachable_manager_raises_transport_error() -> None:
    retry = RequestRetryPolicy(
        max_attempts=2,
        backoff=Backoff(initial=timedelta(milliseconds=1), maximum=timedelta(milliseconds=1)),
    )
    async with JobnikClient(f"http://127.0.0.1:{free_port()}", retry=retry) as client:
        with pytest.raises(JobnikTransportError) as failed:
            await client.get_job(uuid.uuid4())
    assert isinstance(failed.value.__cause__, httpx.ConnectError)


async def test_an_error_body_that_is_not_json_still_maps() -> None:
    async def proxy(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 502, "headers": []})
        await send({"type": "http.response.body", "body": b"<html>bad gateway</html>"})

    no_retry = RequestRetryPolicy(max_attempts=1)
    async with client_for(httpx.ASGITransport(app=proxy), retry=no_retry) as client:
        with pytest.raises(ApiError) as failed:
            await client.get_job(uuid.uuid4())
    assert (failed.value.status_code, failed.value.code) == (502, "HTTP_502")
    assert "bad gateway" in failed.value.message


@pytest.mark.parametrize(
    ("method", "key", "claims", "expected"),
    [
        ("GET", False, False, Replay.IDEMPOTENT),
        ("PUT", False, False, Replay.IDEMPOTENT),
        ("PATCH", False, False, Replay.IDEMPOTENT),
        ("DELETE", False, False, Replay.IDEMPOTENT),
        ("POST", True, False, Replay.IDEMPOTENT),
        ("POST", False, False, Replay.UNSENT_ONLY),
        ("PATCH", False, True, Replay.UNSENT_ONLY),
        ("POST", False, True, Replay.UNSENT_ONLY),
    ],
)
def test_which_requests_repeat_safely(
    method: str, key: bool, claims: bool, expected: Replay
) -> None:
    assert replay_for(method, has_idempotency_key=key, claims=claims) is expected


def test_a_repeatable_post_repeats_but_a_claim_never() -> None:
    assert replay_for("POST", has_idempotency_key=False, claims=False, repeatable=True) is (
        Replay.IDEMPOTENT
    )
    assert replay_for("POST", has_idempotency_key=False, claims=True, repeatable=True) is (
        Replay.UNSENT_ONLY
    )


_REQUEST = httpx.Request("GET", "http://x")


@pytest.mark.parametrize(
    ("error", "status", "idempotent", "unsent_only"),
    [
        (httpx.ConnectError("x", request=_REQUEST), None, True, True),
        (httpx.ConnectTimeout("x", request=_REQUEST), None, True, True),
        (httpx.PoolTimeout("x", request=_REQUEST), None, True, True),
        (httpx.ReadTimeout("x", request=_REQUEST), None, True, False),
        (httpx.WriteTimeout("x", request=_REQUEST), None, True, False),
        (httpx.ReadError("x", request=_REQUEST), None, True, False),
        (httpx.RemoteProtocolError("x", request=_REQUEST), None, True, False),
        (ValueError("not a transport error"), None, False, False),
        (None, 502, True, False),
        (None, 503, True, False),
        (None, 504, True, False),
        (None, 500, False, False),
        (None, 429, False, False),
        (None, 400, False, False),
        (None, 404, False, False),
        (None, 409, False, False),
        (None, 200, False, False),
    ],
)
def test_should_retry_table(
    error: BaseException | None, status: int | None, idempotent: bool, unsent_only: bool
) -> None:
    assert should_retry(Replay.IDEMPOTENT, error=error, status=status) is idempotent
    assert should_retry(Replay.UNSENT_ONLY, error=error, status=status) is unsent_only


def test_backoff_grows_with_jitter_up_to_its_maximum() -> None:
    backoff = Backoff(initial=timedelta(milliseconds=100), maximum=timedelta(seconds=1), jitter=0.5)
    for step, base in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8)]:
        delays = {backoff.delay(step).total_seconds() for _ in range(50)}
        assert all(base * 0.5 <= d <= min(1.0, base * 1.5) for d in delays)
        assert len(delays) > 1, "jitter spreads the delays"
    assert all(backoff.delay(20).total_seconds() <= 1.0 for _ in range(50))
    assert Backoff(jitter=0).delay(1) == timedelta(milliseconds=200)
    with pytest.raises(ValueError):
        Backoff(initial=timedelta(seconds=2), maximum=timedelta(seconds=1))
    with pytest.raises(ValueError):
        RequestRetryPolicy(max_attempts=0)


async def test_a_task_event_is_retried_with_one_key() -> None:
    # A handler's `ctx.emit` rides out a restart: the entry carries a key of its own,
    # so the manager adds it once however often it is sent.
    entry = {
        "id": 7,
        "time": "2026-01-01T00:00:00Z",
        "entity": "TASK",
        "entityId": TASK["id"],
        "jobId": JOB["id"],
        "taskId": TASK["id"],
        "name": "tile.rendered",
        "level": "info",
    }
    server = ScriptedManager([503, 503], entry)
    async with client_for(on(server), auto_keys=True) as client:
        added = await client.add_task_event(TASK["id"], "tile.rendered")
    assert added.name == "tile.rendered"
    keys = [r["idempotency-key"] for r in server.requests]
    assert len(keys) == 3 and len(set(keys)) == 1 and uuid.UUID(keys[0])
