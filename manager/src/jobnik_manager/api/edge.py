"""The request edge: what every reader of a request takes from one place.

`RequestEdge` wraps the whole app, outside every other middleware. It leaves an
`Inbound` in the request's scope and hands the app a `receive` of its own; it reads
nothing and answers nothing itself. The first reader that wants the body (the
authenticator, the guard, or a route) has `Inbound.body` read it, once, up to the most a
request may carry; `Inbound.parsed` parses it, once (`body_scan.parse`); and the
`receive` the app was given replays the bytes read, so a route reads them as if they
came from the client. The routes of `EdgeRoute` take the parsed value rather than parse
the bytes again. The route template a path matches is resolved once in the same way, by
the app's `RouteTemplates` (observe.http).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..asgi import HttpMiddleware
from .body_scan import Refusal, Unreadable, parse

INBOUND_KEY = "jobnik.inbound"


class Read(enum.Enum):
    COMPLETE = "complete"
    TOO_LARGE = "too large"  # past the limit: what was read so far, the rest unread
    GONE = "gone"  # the client left before it sent all of it


@dataclass(frozen=True, slots=True)
class Body:
    data: bytes
    read: Read


class Inbound:
    """A request's body as the edge read it, and its JSON value as the edge parsed it."""

    __slots__ = ("_body", "_headers", "_limits", "_parsed", "_receive", "_replayed")

    def __init__(self, scope: Scope, receive: Receive, limits: Limits) -> None:
        self._receive = receive
        self._limits = limits
        self._headers: list[tuple[bytes, bytes]] = scope["headers"]
        self._body: Body | None = None
        self._parsed: Any = _UNPARSED
        self._replayed = False

    async def body(self) -> Body:
        """All of the body, read on the first call; past the limit (or a Content-Length
        past it), only what was read when it was found out."""
        if self._body is None:
            self._body = await self._read()
        return self._body

    def parsed(self) -> Any:
        """The body's JSON value, or the `Refusal` or `Unreadable` of `body_scan.parse`;
        only once `body` has read all of it."""
        if self._parsed is _UNPARSED:
            assert self._body is not None and self._body.read is Read.COMPLETE
            self._parsed = parse(self._body.data, max_values=self._limits.max_values)
        return self._parsed

    async def receive(self) -> Message:
        """The app's `receive`: the body read so far first, then the rest of the stream."""
        if self._replayed:
            return await self._receive()
        self._replayed = True
        body = await self.body()
        return {
            "type": "http.request",
            "body": body.data,
            "more_body": body.read is not Read.COMPLETE,
        }

    async def _read(self) -> Body:
        limit = self._limits.max_bytes
        length = content_length(self._headers)
        if length is not None and length > limit:
            return Body(b"", Read.TOO_LARGE)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self._receive()
            if message["type"] != "http.request":
                return Body(b"".join(chunks), Read.GONE)
            chunk: bytes = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if not message.get("more_body", False):
                return Body(chunks[0] if len(chunks) == 1 else b"".join(chunks), Read.COMPLETE)
            if size > limit:
                return Body(b"".join(chunks), Read.TOO_LARGE)


_UNPARSED = object()


@dataclass(frozen=True, slots=True)
class Limits:
    """The most a request's body may carry: bytes, and JSON values once parsed."""

    max_bytes: int
    max_values: int


def inbound(scope: Scope) -> Inbound:
    """What the edge left in the request's scope. The guard and the authenticator decide
    on it: without the edge outside them, they refuse to run rather than pass a body
    they have not seen."""
    found: Inbound | None = scope.get(INBOUND_KEY)
    if found is None:
        raise LookupError("no request edge: RequestEdge must wrap the app's middleware")
    return found


class RequestEdge(HttpMiddleware):
    def __init__(self, app: ASGIApp, *, limits: Limits) -> None:
        super().__init__(app)
        self.limits = limits

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        edge = Inbound(scope, receive, self.limits)
        scope[INBOUND_KEY] = edge
        await self.app(scope, edge.receive, send)


def content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """A request's Content-Length, if it gives a number."""
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class EdgeRequest(Request):
    """A request whose JSON body is the value the edge parsed, when it parsed one."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await edge_json(self)
        return self._json


async def edge_json(request: Request) -> Any:
    """The request's JSON body, as the edge parsed it if it did."""
    edge: Inbound | None = request.scope.get(INBOUND_KEY)
    if edge is not None:
        body = await edge.body()
        if body.read is Read.COMPLETE and body.data:
            value = edge.parsed()
            if not isinstance(value, (Refusal, Unreadable)):
                return value
    # No edge, or a body it did not take: the route parses it and words the error.
    return await Request.json(request)


class EdgeRoute(APIRoute):
    """A route that reads its JSON body as the edge parsed it."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handle = super().get_route_handler()
        if self.body_field is None:
            return handle

        async def route(request: Request) -> Response:
            response: Response = await handle(EdgeRequest(request.scope, request.receive))
            return response

        return route
