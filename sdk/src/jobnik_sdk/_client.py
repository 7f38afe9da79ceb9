"""JobnikClient: the async client for producers and workers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta

import httpx

from ._consumer import ConsumerCalls
from ._http import DEFAULT_LIMITS, Http
from ._producer import ProducerCalls
from ._retry import RequestRetryPolicy
from ._schedules import ScheduleCalls

DEFAULT_URL = "http://127.0.0.1:8080"
TOKEN_ENV = "JOBNIK_TOKEN"


class JobnikClient(ProducerCalls, ScheduleCalls, ConsumerCalls):
    """An async client of one Jobnik manager.

    Use it as `async with JobnikClient(url) as client: ...`, or call `aclose()`.

    Failed requests are retried by `retry` (see RequestRetryPolicy for which). `transport`
    replaces the network, e.g. `httpx.ASGITransport(app=...)` to run a manager app
    in-process in tests. With `auto_idempotency_keys` (the default), each create call
    carries a fresh `Idempotency-Key`, the same on each of its retries, which makes it
    safe to retry: the manager answers a repeat with its first answer. Turn it off
    against a manager that ignores the header (a reference Jobnik manager), where a
    retried create could create a thing twice; creates are then retried only when they
    surely never reached the manager. `limits` bounds the connection pool (by default up
    to 100 connections, of which 10 are kept alive for 4 seconds). A plain `http://`
    manager without a proxy is reached through the SDK's own HTTP/1.1 transport
    (`_transport.py`, half httpx's time per call); https and proxies through httpx's.

    `token` is sent as `Authorization: Bearer <token>` on every request, for a manager
    that runs with authentication; when it is None the client reads `JOBNIK_TOKEN` from
    the environment (unset or empty: no token; `token=""` ignores the environment). A
    refused token raises AuthenticationError (401), a call the token's role does not
    allow PermissionDeniedError (403); neither is retried. The token is not shown in
    the client's repr, in the SDK's logs or in the errors it raises.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        timeout: timedelta = timedelta(seconds=30),
        retry: RequestRetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        auto_idempotency_keys: bool = True,
        limits: httpx.Limits | None = None,
        token: str | None = None,
    ) -> None:
        if token is None:
            token = os.environ.get(TOKEN_ENV)
        self._http = Http(
            base_url,
            transport=transport,
            timeout=timeout,
            retry=retry or RequestRetryPolicy(),
            headers=headers,
            auto_idempotency_keys=auto_idempotency_keys,
            limits=limits or DEFAULT_LIMITS,
            token=(token or "").strip() or None,
        )

    @property
    def base_url(self) -> str:
        """The manager's base URL."""
        return self._http.base_url

    async def aclose(self) -> None:
        """Close the connections; the client cannot be used afterwards."""
        await self._http.aclose()

    async def __aenter__(self) -> JobnikClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"JobnikClient({self.base_url!r})"


# What a Worker needs from a client. FakeJobnik is a JobnikClient on an in-process
# manager, so one class serves both; the name stays for code written against it.
ConsumerClient = JobnikClient
