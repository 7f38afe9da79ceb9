"""The HTTP seam: every call to the manager goes through `Http.request`, which applies
the retry policy and turns failures into the SDK's exceptions."""

from __future__ import annotations

import logging
import urllib.request
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

import httpx

from ._direct import DirectCalls
from ._exceptions import JobnikTransportError, api_error, redact
from ._retry import RequestRetryPolicy, replay_for, send_with_retries
from ._transport import PlainHttpTransport
from ._version import __version__

ParamValue = str | int | float | bool | datetime | uuid.UUID | Enum | list[str] | None

# A worker keeps a handful of calls in flight (a claim, a batch of reports, a batch of
# heartbeats, its handlers' own calls). httpcore looks at every pooled connection on each
# request, so idle ones beyond that only cost time; the expiry stays under the 5 s
# keep-alive of common servers (uvicorn's), so a connection is not reused as it closes.
DEFAULT_LIMITS = httpx.Limits(
    max_connections=100, max_keepalive_connections=10, keepalive_expiry=4.0
)


def _quiet_httpx() -> None:
    """httpx logs every request at INFO, so a worker's claims and heartbeats would fill an
    application's INFO log. Unless the application set httpx's level itself, keep it to
    warnings; the SDK logs what matters (failures, retries, each task's start and end)."""
    httpx_log = logging.getLogger("httpx")
    if httpx_log.level == logging.NOTSET:
        httpx_log.setLevel(logging.WARNING)


def _plain_transport(base_url: str, limits: httpx.Limits) -> PlainHttpTransport | None:
    """The SDK's own transport for a manager reached over plain http without a proxy
    (_transport.py); None leaves httpx its own (https, a proxy from the environment)."""
    url = httpx.URL(base_url)
    proxies = urllib.request.getproxies()
    proxied = ("http" in proxies or "all" in proxies) and not urllib.request.proxy_bypass(url.host)
    if url.scheme != "http" or proxied:
        return None
    return PlainHttpTransport(limits)


class Http:
    """An httpx client bound to one manager, with retries and error mapping."""

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None,
        timeout: timedelta,
        retry: RequestRetryPolicy,
        headers: Mapping[str, str] | None,
        auto_idempotency_keys: bool,
        limits: httpx.Limits = DEFAULT_LIMITS,
        token: str | None = None,
    ) -> None:
        _quiet_httpx()
        # Kept only to mask it in error messages; it goes out in the client's headers.
        self._token = token or None
        self._retry = retry
        self._auto_keys = auto_idempotency_keys
        self._timeout = timeout.total_seconds()
        self._default_timeout = httpx.Timeout(self._timeout)
        plain = None if transport is not None else _plain_transport(base_url, limits)
        self._client = httpx.AsyncClient(
            base_url=base_url,
            transport=transport or plain,
            timeout=self._timeout,
            limits=limits,
            headers={"User-Agent": f"jobnik-sdk/{__version__}", **(headers or {})},
        )
        if self._token:
            self._client.headers["Authorization"] = f"Bearer {self._token}"
        # Calls on the SDK's own transport skip httpx's client layer (_direct.py).
        self._direct = DirectCalls(self._client, plain) if plain is not None else None

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def idempotency_key(self, explicit: str | None) -> str | None:
        """The key for one create call: the caller's, or a fresh one when keys are
        automatic. It is made once per call, so that every retry repeats it."""
        if explicit is not None:
            return explicit
        return str(uuid.uuid4()) if self._auto_keys else None

    async def create(
        self,
        path: str,
        body: Any,
        *,
        idempotency_key: str | None,
        params: Mapping[str, ParamValue] | None = None,
    ) -> Any:
        """POST a create call under `idempotency_key` (or an automatic one), so that it is
        retried like any create; the answer's JSON."""
        response = await self.request(
            "POST",
            path,
            json=body,
            params=params,
            idempotency_key=self.idempotency_key(idempotency_key),
        )
        return response.json()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, ParamValue] | None = None,
        idempotency_key: str | None = None,
        claims: bool = False,
        repeatable: bool = False,
        held_for: timedelta | None = None,
    ) -> httpx.Response:
        """Send one call; return its response when it succeeded (2xx).

        `idempotency_key` is sent as the `Idempotency-Key` header of every try of this
        call. `held_for` is how long the manager may hold the call on purpose (a long
        poll); it is added to the read timeout. Raises JobnikTransportError when the
        manager was not reached, ApiError (or a subclass) when it answered with an error
        status.
        """
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        query = _query(params) if params else None
        timeout = self._default_timeout
        if held_for:
            timeout = httpx.Timeout(self._timeout, read=self._timeout + held_for.total_seconds())
        replay = replay_for(
            method,
            has_idempotency_key=bool(idempotency_key),
            claims=claims,
            repeatable=repeatable,
        )

        direct = self._direct if self._direct is not None and self._direct.usable(path) else None

        async def send() -> httpx.Response:
            if direct is not None:
                return await direct.send(
                    method, path, json_body=json, query=query, headers=headers, limits=timeout
                )
            return await self._client.request(
                method, path, json=json, params=query, headers=headers, timeout=timeout
            )

        try:
            response = await send_with_retries(
                send, replay=replay, policy=self._retry, secret=self._token
            )
        except httpx.TransportError as exc:
            message = redact(f"{method} {path}: {type(exc).__name__}: {exc}", self._token)
            raise JobnikTransportError(message) from exc
        if response.is_error:
            raise api_error(response, secret=self._token)
        return response

    async def aclose(self) -> None:
        await self._client.aclose()


def _query(params: Mapping[str, ParamValue]) -> dict[str, str | list[str]]:
    """The parameters as the query string has them; a list repeats its parameter."""
    query: dict[str, str | list[str]] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, list):
            query[key] = value
        elif isinstance(value, bool):
            query[key] = "true" if value else "false"
        elif isinstance(value, datetime):
            query[key] = value.isoformat()
        elif isinstance(value, Enum):
            query[key] = str(value.value)
        else:
            query[key] = str(value)
    return query
