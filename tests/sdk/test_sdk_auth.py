"""Bearer tokens on the client side: which token a client sends, how a refusal maps to
an error that is not retried, and that the token shows up nowhere but in the header."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from jobnik_sdk import (
    ApiError,
    AuthenticationError,
    JobnikClient,
    JobnikTransportError,
    NotFoundError,
    PermissionDeniedError,
    RequestRetryPolicy,
    TaskContext,
    Worker,
)

from .conftest import FAST_RETRY, QUICK

TOKEN = "jnk_" + "A1b2-C3d4_" * 4 + "xyz"  # 4 + 43 url-safe characters
OTHER = "jnk_" + "Z" * 43
URL = "http://manager"

Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport that keeps every request and answers with `answer`."""

    def __init__(self, answer: Handler | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._answer = answer or (lambda request: httpx.Response(200, json=_page()))
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._answer(request)

    @property
    def authorizations(self) -> list[str | None]:
        return [request.headers.get("Authorization") for request in self.requests]


def _page() -> dict[str, object]:
    return {"items": [], "total": 0}


def _refuse(status: int, code: str, message: str = "refused") -> Handler:
    return lambda request: httpx.Response(status, json={"message": message, "code": code})


@pytest.fixture(autouse=True)
def _no_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBNIK_TOKEN", raising=False)


# ---- which token goes out -------------------------------------------------------------


async def test_the_token_argument_is_sent_as_a_bearer_token() -> None:
    recorder = Recorder()
    async with JobnikClient(URL, transport=recorder.transport, token=TOKEN) as client:
        await client.list_jobs()
        await client.list_jobs()
    assert recorder.authorizations == [f"Bearer {TOKEN}"] * 2


async def test_the_token_comes_from_jobnik_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBNIK_TOKEN", TOKEN)
    recorder = Recorder()
    async with JobnikClient(URL, transport=recorder.transport) as client:
        await client.list_jobs()
    assert recorder.authorizations == [f"Bearer {TOKEN}"]


async def test_the_argument_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBNIK_TOKEN", OTHER)
    recorder = Recorder()
    async with JobnikClient(URL, transport=recorder.transport, token=TOKEN) as client:
        await client.list_jobs()
    async with JobnikClient(URL, transport=recorder.transport, token="") as client:
        await client.list_jobs()
    assert recorder.authorizations == [f"Bearer {TOKEN}", None]


@pytest.mark.parametrize("env", [None, "", "  \n"])
async def test_no_token_no_header(monkeypatch: pytest.MonkeyPatch, env: str | None) -> None:
    if env is not None:
        monkeypatch.setenv("JOBNIK_TOKEN", env)
    recorder = Recorder()
    async with JobnikClient(URL, transport=recorder.transport) as client:
        await client.list_jobs()
    assert recorder.authorizations == [None]


async def test_a_token_read_from_a_file_loses_its_newline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBNIK_TOKEN", f"{TOKEN}\n")
    recorder = Recorder()
    async with JobnikClient(URL, transport=recorder.transport) as client:
        await client.list_jobs()
    assert recorder.authorizations == [f"Bearer {TOKEN}"]


# ---- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [(401, "UNAUTHORIZED", AuthenticationError), (403, "FORBIDDEN", PermissionDeniedError)],
)
async def test_refusals_map_to_their_errors_and_are_not_retried(
    status: int, code: str, error: type[ApiError]
) -> None:
    recorder = Recorder(_refuse(status, code, "no entry"))
    async with JobnikClient(
        URL, transport=recorder.transport, token=TOKEN, retry=FAST_RETRY
    ) as client:
        with pytest.raises(error) as raised:
            await client.list_jobs()  # a GET: retried on 502/503/504
        with pytest.raises(error):
            await client.get_job(uuid.uuid4())
    assert isinstance(raised.value, ApiError)
    assert (raised.value.status_code, raised.value.code) == (status, code)
    assert raised.value.message == "no entry"
    assert len(recorder.requests) == 2


async def test_the_token_is_in_no_repr_and_no_error() -> None:
    # An answer that repeats the request's header, as a debugging proxy might.
    def echo(request: httpx.Request) -> httpx.Response:
        said = request.headers["Authorization"]
        return httpx.Response(401, json={"message": f"bad {said}", "code": "UNAUTHORIZED"})

    recorder = Recorder(echo)
    client = JobnikClient(URL, transport=recorder.transport, token=TOKEN)
    try:
        assert TOKEN not in repr(client)
        assert TOKEN not in repr(client._http._client.headers)
        with pytest.raises(AuthenticationError) as raised:
            await client.list_jobs()
        assert TOKEN not in str(raised.value)
        assert TOKEN not in raised.value.message
        assert TOKEN not in repr(raised.value)
    finally:
        await client.aclose()


async def test_a_transport_error_does_not_show_the_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"refused with {request.headers['Authorization']}")

    recorder = Recorder(fail)
    async with JobnikClient(
        URL, transport=recorder.transport, token=TOKEN, retry=FAST_RETRY
    ) as client:
        with pytest.raises(JobnikTransportError) as raised:
            await client.list_jobs()
    assert len(recorder.requests) == FAST_RETRY.max_attempts
    assert TOKEN not in str(raised.value)
    assert "retrying" in caplog.text  # each retry is logged, without the token
    assert TOKEN not in caplog.text


async def test_other_errors_map_as_before() -> None:
    recorder = Recorder(_refuse(404, "JOB_NOT_FOUND"))
    async with JobnikClient(URL, transport=recorder.transport, token=TOKEN) as client:
        with pytest.raises(NotFoundError):
            await client.get_job(uuid.uuid4())


# ---- the worker -----------------------------------------------------------------------


async def _never(data: object, ctx: TaskContext) -> None:
    raise AssertionError("no task should reach the handler")


def _tile_worker(client: JobnikClient, **options: Any) -> Worker[Any]:
    """A worker of `client` on "tile" tasks that must never come, polling quickly."""
    return Worker(
        client,
        stage_types="tile",
        handler=_never,
        poll_backoff=QUICK,
        handle_signals=False,
        **options,
    )


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [(401, "UNAUTHORIZED", AuthenticationError), (403, "FORBIDDEN", PermissionDeniedError)],
)
async def test_a_refused_worker_logs_it_once_and_stops(
    caplog: pytest.LogCaptureFixture, status: int, code: str, error: type[ApiError]
) -> None:
    recorder = Recorder(_refuse(status, code, "token revoked"))
    client = JobnikClient(URL, transport=recorder.transport, token=TOKEN, retry=FAST_RETRY)
    worker = _tile_worker(client, name="tile-1")
    caplog.set_level(logging.DEBUG)
    try:
        with pytest.raises(error):
            await worker.run()
    finally:
        await client.aclose()
    assert len(recorder.requests) == 1  # not retried, not claimed again
    assert recorder.authorizations == [f"Bearer {TOKEN}"]
    refusals = [
        r for r in caplog.records if "the manager refused this worker's token" in r.getMessage()
    ]
    assert len(refusals) == 1
    assert refusals[0].levelno == logging.ERROR
    assert "token revoked" in refusals[0].getMessage()
    assert TOKEN not in caplog.text


async def test_a_worker_built_from_a_url_sends_its_token(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder(_refuse(401, "UNAUTHORIZED"))
    real_client = JobnikClient

    def on_recorder(base_url: str, **options: object) -> JobnikClient:
        return real_client(base_url, transport=recorder.transport, **options)  # type: ignore[arg-type]

    monkeypatch.setattr("jobnik_sdk._worker.JobnikClient", on_recorder)
    worker = Worker(URL, stage_types="tile", handler=_never, handle_signals=False, token=TOKEN)
    with pytest.raises(AuthenticationError):
        await worker.run()
    assert recorder.authorizations == [f"Bearer {TOKEN}"]
    assert TOKEN not in caplog.text

    monkeypatch.setenv("JOBNIK_TOKEN", OTHER)
    recorder.requests.clear()
    worker = Worker(URL, stage_types="tile", handler=_never, handle_signals=False)
    with pytest.raises(AuthenticationError):
        await worker.run()
    assert recorder.authorizations == [f"Bearer {OTHER}"]


async def test_a_worker_given_a_client_takes_no_token() -> None:
    async with JobnikClient(URL, transport=Recorder().transport) as client:
        with pytest.raises(ValueError, match="token"):
            Worker(client, stage_types="tile", handler=_never, token=TOKEN)


async def test_a_worker_waiting_for_work_is_not_stopped_by_other_errors() -> None:
    # A 500 on a claim is logged and claimed again, as before: only refusals stop it.
    answers = iter([_refuse(500, "INTERNAL"), _refuse(401, "UNAUTHORIZED")])
    current = next(answers)

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal current
        response = current(request)
        current = next(answers, current)
        return response

    recorder = Recorder(answer)
    retry = RequestRetryPolicy(max_attempts=1)
    async with JobnikClient(URL, transport=recorder.transport, token=TOKEN, retry=retry) as client:
        worker = _tile_worker(client, claim_wait=timedelta(0))
        with pytest.raises(AuthenticationError):
            await worker.run()
    assert len(recorder.requests) == 2
