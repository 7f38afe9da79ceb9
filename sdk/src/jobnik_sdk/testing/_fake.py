"""FakeManager: the Jobnik REST API served from memory through an httpx transport, and
FakeJobnik: a JobnikClient on one, for tests."""

from __future__ import annotations

import asyncio
import warnings
from datetime import timedelta
from typing import Any

import httpx

from .._client import JobnikClient
from ._api import Api, Call
from ._clock import FakeClock
from ._refusals import Refused
from ._work import State

FAKE_URL = "http://jobnik.fake"


class FakeManager:
    """An in-memory Jobnik manager, reached through `transport`.

    It answers the manager's REST API (the calls the SDK makes, with their validation,
    errors and JSON) by the manager's rules: stage order and approval, claims by
    priority then age with leases (waiting for work when asked to), heartbeats, reports
    with retries while attempts remain (after the retry policy's delay), retry-later
    and non-retryable failures, leases that run out into failed attempts, stage and job
    completion or failure, pause, resume, abort and delete, the event history, and
    idempotency keys on creates. Its time is `clock`. Nothing is persisted and nothing
    leaves the process.

    Put any JobnikClient on it with `JobnikClient(url, transport=manager.transport)`:
    the client's real HTTP, serialization, error mapping and retries run against it.
    """

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        self._state = State(self.clock)
        self._api = Api(self._state)
        self.transport: httpx.AsyncBaseTransport = httpx.MockTransport(self._handle)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        # An answer comes back on a later turn of the event loop, as over a network: a
        # caller that calls again and again (a worker polling) lets other tasks run.
        await asyncio.sleep(0)
        call = Call(
            method=request.method,
            path=request.url.path,
            params=request.url.params,
            raw=await request.aread(),
            idempotency_key=request.headers.get("Idempotency-Key"),
        )
        try:
            status, body = await self._api.answer(call)
        except Refused as refused:
            status, body = refused.status, refused.body()
        if body is None:
            return httpx.Response(status)
        return httpx.Response(status, json=body)


class FakeJobnik(JobnikClient):
    """A JobnikClient on a FakeManager (a new one unless `manager` is given), for tests.

    Use it wherever a JobnikClient goes, a Worker included: every call takes the SDK's
    own path (HTTP, JSON, errors, retries) to the manager in memory. `clock` is the
    manager's; `clock.advance(...)` lets leases and retry delays run out without
    waiting. `client(...)` is another client on the same manager, with other options;
    `transport` puts a client of your own on it. `options` are JobnikClient's
    (`retry`, `timeout`, `headers`, ...). Its `wait` polls every 10 ms by default.
    """

    _wait_poll_interval = timedelta(milliseconds=10)

    def __init__(self, manager: FakeManager | None = None, **options: Any) -> None:
        self.manager = manager or FakeManager()
        super().__init__(FAKE_URL, transport=self.manager.transport, **options)

    @property
    def clock(self) -> FakeClock:
        """The fake manager's clock."""
        return self.manager.clock

    @property
    def transport(self) -> httpx.AsyncBaseTransport:
        """The fake manager's transport, for a JobnikClient of your own."""
        return self.manager.transport

    def client(self, **options: Any) -> FakeJobnik:
        """Another client on the same fake manager; `options` as JobnikClient's."""
        return FakeJobnik(self.manager, **options)

    def advance(self, by: timedelta) -> None:
        """Deprecated: `clock.advance(by)`."""
        warnings.warn(
            "FakeJobnik.advance is deprecated; use fake.clock.advance",
            DeprecationWarning,
            stacklevel=2,
        )
        self.clock.advance(by)

    def __repr__(self) -> str:
        return "FakeJobnik()"
