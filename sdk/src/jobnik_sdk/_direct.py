"""A call written straight onto the SDK's own transport, past httpx's client layer.

httpx's client builds a Request, merges the URL, headers, cookies and timeouts, runs its
hooks and wraps the answer: about 0.2 ms of CPU per call, several times what the
transport's own exchange costs (docs/performance.md). A worker's claims and reports and
a producer's creates cross it on every task. `DirectCalls` writes the same request
(`tests/sdk/test_sdk_direct_calls.py` holds the bytes of both alike) and hands back the
answer as an httpx.Response, so the retry policy and error mapping see no difference.

It steps aside, leaving the call to the client, for what it does not write itself: a
path it would have to escape, a closed client, a client holding cookies (an answer that
sets one leaves every later call to the client) and a transport that instrumentation
has wrapped.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from ._transport import PlainHttpTransport

log = logging.getLogger("httpx")  # where httpx's client logs each call, at INFO

# A path the client would send as it is: nothing to escape.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9/_.~-]*\Z")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class DirectCalls:
    """Calls of `client`, whose transport is `transport`, written by hand."""

    def __init__(self, client: httpx.AsyncClient, transport: PlainHttpTransport) -> None:
        self._client = client
        self._transport = transport
        base = client.base_url
        self._key = (base.host, base.port or 80)
        self._prefix = base.raw_path.rstrip(b"/")

    def usable(self, path: str) -> bool:
        """Whether the call to `path` may go this way (the module's docstring)."""
        transport = self._client._transport  # the client's own, as it is now
        return (
            transport is self._transport
            and not self._client.is_closed  # which the client's call raises
            and "handle_async_request" not in vars(transport)
            and not self._client.cookies
            and _PLAIN_PATH.match(path) is not None
        )

    async def send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any,
        query: Mapping[str, str | list[str]] | None,
        headers: Mapping[str, str] | None,
        limits: httpx.Timeout,
    ) -> httpx.Response:
        """The call as the client would send it under the timeouts `limits`, and its
        answer. Raises httpx's errors."""
        target = self._prefix + path.encode()
        if query:
            target += b"?" + urlencode(query, doseq=True, quote_via=quote).encode()
        body = b""
        host = self._client.base_url.netloc
        lines = [b"%s %s HTTP/1.1\r\nHost: %s\r\n" % (method.encode(), target, host)]
        lines += [b"%s: %s\r\n" % pair for pair in self._client.headers.raw]
        if headers:
            # ASCII, as httpx encodes a header given as text.
            lines += [
                b"%s: %s\r\n" % (k.encode("ascii"), v.encode("ascii")) for k, v in headers.items()
            ]
        if json_body is not None:
            # As httpx encodes a `json=` body.
            body = json.dumps(
                json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode()
            lines.append(b"Content-Length: %d\r\nContent-Type: application/json\r\n" % len(body))
        elif method in _BODY_METHODS:
            lines.append(b"Content-Length: 0\r\n")
        lines.append(b"\r\n")
        status, answer_headers, content = await self._transport.send(
            self._key,
            b"".join(lines),
            body,
            connect=limits.connect,
            read=limits.read,
            pool=limits.pool,
        )
        response = httpx.Response(status, headers=answer_headers, content=content)
        if log.isEnabledFor(logging.INFO):
            log.info(
                'HTTP Request: %s %s "HTTP/1.1 %d %s"',
                method,
                target.decode(),
                status,
                response.reason_phrase,
            )
        if "set-cookie" in response.headers:
            # Kept as the client keeps them; the client sends them from now on (`usable`).
            response.request = httpx.Request(method, self._client.base_url.join(path))
            self._client.cookies.extract_cookies(response)
        return response
