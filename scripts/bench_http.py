"""A keep-alive HTTP/1.1 connection for load generators, as light as a client can be.

A benchmark's client shares the machine with the manager and PostgreSQL; httpx costs
about a millisecond of CPU per request, as much as the manager spends answering it, so
on a small machine the figures measured the client as much as the system under test.
This writes each request itself and leaves parsing the answer to httptools, the parser
uvicorn already runs on (it comes with `uvicorn[standard]`): a few tens of microseconds
a request. One request at a time per connection, no redirects, no compression, no
retries: enough for loops of plain requests to one server, nothing more.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httptools


class Connection(asyncio.Protocol):
    """One connection; `request` answers (status, body) of one request at a time."""

    def __init__(self, host: str) -> None:
        self._host = host.encode()
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._answer: asyncio.Future[tuple[int, bytes]] | None = None
        self._body: list[bytes] = []

    @classmethod
    async def open(cls, base: str) -> Connection:
        url = urlsplit(base)
        if url.scheme != "http" or url.hostname is None:
            raise ValueError(f"{base}: only http://host:port is supported")
        host, port = url.hostname, url.port or 80
        _, conn = await asyncio.get_running_loop().create_connection(
            lambda: cls(f"{host}:{port}"), host, port
        )
        return conn

    async def request(
        self, method: str, path: str, body: bytes = b"", *, json: bool = False
    ) -> tuple[int, bytes]:
        if self._transport is None or self._transport.is_closing():
            raise ConnectionError("the connection is closed")
        head = b"%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n" % (
            method.encode(),
            path.encode(),
            self._host,
            len(body),
        )
        if json:
            head += b"Content-Type: application/json\r\n"
        self._body = []
        self._answer = asyncio.get_running_loop().create_future()
        self._transport.write(head + b"\r\n" + body)
        return await self._answer

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    # ---- asyncio.Protocol and httptools callbacks ----

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionError(f"unparseable answer: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("the server closed the connection"))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result((self._parser.get_status_code(), b"".join(self._body)))

    def _fail(self, exc: Exception) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(exc)
        if self._transport is not None:
            self._transport.close()
