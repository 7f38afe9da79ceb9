"""HTTP/1.1 over plain TCP for the SDK's calls, answers parsed by httptools.

httpx's own transport (httpcore over anyio, h11 parsing) spends about 0.45 ms of CPU on
each call beyond what a socket and a compiled parser need (docs/performance.md): a
worker makes a claim, a report batch and a heartbeat batch in a loop, and a new task's
latency crosses two calls (the producer's create, the worker's claim). This transport
does the network part of a call for httpx's client, which keeps its API, headers,
redirects and errors: connections kept alive per host, at most `max_connections` open,
httpx's timeouts (connect, read: the longest silence while an answer is awaited, pool)
and httpx's exceptions, so the SDK's retry policy tells a call that never left from one
that may have.

Only plain `http://` without a proxy: `Http` gives https and proxied managers httpx's
own transport.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import httptools
import httpx

_Key = tuple[str, int]


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one exchange at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._done: asyncio.Future[None] | None = None
        self._heard = 0.0  # when bytes last arrived: the read timeout is of silence
        self._any = False
        self._timer: asyncio.TimerHandle | None = None
        self._answer: tuple[int, list[tuple[bytes, bytes]], bytes, bool] = (0, [], b"", False)

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._done is None or self._done.done():
            self.close()  # bytes nobody asked for: the next answer could not be told apart
            return
        self._heard = time.monotonic()
        self._any = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("the manager upgraded the connection"))
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed answer: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._done is not None and not self._done.done():
            if not self._any:
                error: Exception = httpx.RemoteProtocolError(
                    "Server disconnected without sending a response."
                )
            elif exc is not None:
                error = httpx.ReadError(str(exc) or type(exc).__name__)
            else:
                error = httpx.RemoteProtocolError("Server disconnected mid-answer.")
            self._done.set_exception(error)

    # -- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_begin(self) -> None:
        if self._done is None or self._done.done():
            self.close()  # an answer nobody asked for: the next could not be told apart

    def on_message_complete(self) -> None:
        # Taken whole here: the parser forgets its status once this returns, and bytes
        # after the answer must not reach it.
        answer = (
            self._parser.get_status_code(),
            self._headers,
            b"".join(self._body),
            self._parser.should_keep_alive(),
        )
        self._headers, self._body = [], []
        if self._done is not None and not self._done.done():
            self._answer = answer
            self._done.set_result(None)

    def _fail(self, error: Exception) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_exception(error)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def exchange(
        self, head: bytes, body: bytes, read_timeout: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
        """Send one request; its answer's status, headers, body and whether the
        connection may carry another."""
        assert self.transport is not None
        if self.closed:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        loop = asyncio.get_running_loop()
        self._headers, self._body, self._any = [], [], False
        done = self._done = loop.create_future()
        # Heard of even when the caller has gone (cancelled): the connection then closes.
        done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._heard = time.monotonic()
        if read_timeout is not None:
            self._timer = loop.call_later(read_timeout, self._silent, read_timeout)
        try:
            self.transport.write(head + body)
            await done
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        return self._answer

    def _silent(self, read_timeout: float) -> None:
        """The read timeout's check: silence for that long fails the exchange; bytes
        heard since push it back."""
        quiet = time.monotonic() - self._heard
        if quiet >= read_timeout:
            self._timer = None
            self._fail(httpx.ReadTimeout("timed out waiting for the answer"))
        else:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(read_timeout - quiet, self._silent, read_timeout)


class PlainHttpTransport(httpx.AsyncBaseTransport):
    """httpx's transport for plain HTTP/1.1 to one or more hosts (module docstring)."""

    def __init__(self, limits: httpx.Limits) -> None:
        self._max = limits.max_connections or 1_000_000
        keep = limits.max_keepalive_connections
        self._keep = self._max if keep is None else keep
        self._expiry = limits.keepalive_expiry
        self._idle: dict[_Key, deque[_Connection]] = {}
        # A permit per open connection, idle ones included; made on the loop that uses it.
        self._permits: asyncio.Semaphore | None = None
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"{request.url.scheme}: plain http only")
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        head = b"%s %s HTTP/1.1\r\n%s\r\n" % (
            request.method.encode(),
            request.url.raw_path,
            b"".join(b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw),
        )
        status, headers, content = await self.send(
            (request.url.host, request.url.port or 80),
            head,
            body,
            connect=timeouts.get("connect"),
            read=timeouts.get("read"),
            pool=timeouts.get("pool"),
        )
        return httpx.Response(
            status,
            headers=headers,
            stream=httpx.ByteStream(content),
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def send(
        self,
        key: _Key,
        head: bytes,
        body: bytes,
        *,
        connect: float | None,
        read: float | None,
        pool: float | None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send a request written whole (`head`, its blank line included, and `body`)
        to `key`'s host and port; its answer's status, headers and body. Raises httpx's
        errors, as for any call through the client."""
        conn = await self._connection(key, connect, pool)
        reusable = False
        try:
            try:
                status, headers, content, keep = await conn.exchange(head, body, read)
            except OSError as exc:  # the write, on a connection found broken
                raise httpx.WriteError(str(exc) or type(exc).__name__) from exc
            reusable = keep and not conn.closed
        finally:
            self._release(key, conn, reusable)
        return status, headers, content

    async def _connection(
        self, key: _Key, connect_timeout: float | None, pool_timeout: float | None
    ) -> _Connection:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()  # the most recently used: the least likely to be closing
            if conn.closed or (self._expiry is not None and now - conn.idle_since > self._expiry):
                self._drop(conn)
                continue
            return conn
        if self._permits is None:
            self._permits = asyncio.Semaphore(self._max)
        try:
            async with asyncio.timeout(pool_timeout):
                await self._permits.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no connection free in time") from None
        try:
            async with asyncio.timeout(connect_timeout):
                _, conn = await asyncio.get_running_loop().create_connection(
                    _Connection, key[0], key[1]
                )
        except TimeoutError:
            self._permits.release()
            raise httpx.ConnectTimeout(f"connecting to {key[0]}:{key[1]} timed out") from None
        except OSError as exc:
            self._permits.release()
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        except BaseException:
            self._permits.release()
            raise
        return conn

    def _release(self, key: _Key, conn: _Connection, reusable: bool) -> None:
        idle = self._idle.setdefault(key, deque())
        if reusable and not self._closed and len(idle) < self._keep:
            conn.idle_since = time.monotonic()
            idle.append(conn)
        else:
            self._drop(conn)

    def _drop(self, conn: _Connection) -> None:
        """Close a connection that is not kept: its permit is free again."""
        conn.close()
        if self._permits is not None:
            self._permits.release()

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            while idle:
                self._drop(idle.popleft())
