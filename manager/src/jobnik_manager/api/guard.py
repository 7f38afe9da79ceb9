"""The first look at every request: text that cannot be stored, and how much may come.

It wraps the whole app, the fast lane included, so no route, model or store sees a
request it refuses. A path segment, query value or header holding a NUL character is
refused (400); a body larger than the edge's limit is answered 413, before it is read
when its Content-Length says so, else as soon as the bytes that came exceed it; a body
that `body_scan.parse` refuses gets that answer. Nothing is stored for a refused request.
The body is the one the edge read and parsed (api/edge.py): what passes goes on to
routes that take its parsed value; a body that is not JSON goes on to the route, which
words the error.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from ..asgi import HttpMiddleware
from .body_scan import Refusal, invalid, larger_than, printable, unstorable
from .edge import Limits, Read, inbound
from .errors import error_response

# Their bodies, if any, are read by no route.
_BODILESS = frozenset({"GET", "HEAD", "OPTIONS"})


class InputGuard(HttpMiddleware):
    def __init__(self, app: ASGIApp, *, limits: Limits) -> None:
        super().__init__(app)
        self.limits = limits

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        edge = inbound(scope)
        refusal, length = _request_line(scope)
        if refusal is None and length is not None and length > self.limits.max_bytes:
            refusal = larger_than(self.limits.max_bytes)
        if refusal is None:
            if length == 0 or scope["method"] in _BODILESS:
                await self.app(scope, receive, send)
                return
            body = await edge.body()
            if body.read is Read.GONE:
                return  # the client left before it sent its body: no one to answer
            if body.read is Read.TOO_LARGE:
                refusal = larger_than(self.limits.max_bytes)
            elif body.data and isinstance(parsed := edge.parsed(), Refusal):
                refusal = parsed
            if refusal is None:
                await self.app(scope, receive, send)
                return
        response = error_response(scope, refusal.status, refusal.code, refusal.message)
        await response(scope, receive, send)


def _request_line(scope: Scope) -> tuple[Refusal | None, int | None]:
    """A refusal of the path, query or headers, if any; and the Content-Length."""
    path: str = scope["path"]
    if not path.isascii() or "\x00" in path:
        for segment in path.split("/"):
            if what := unstorable(segment):
                return invalid(f"path: segment '{printable(segment)}' holds {what}"), None
    query: bytes = scope["query_string"]
    if b"%00" in query or b"\x00" in query:
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if what := unstorable(name) or unstorable(value):
                return invalid(f"{printable(name)}: the query value holds {what}"), None
    length = None
    for name, value in scope["headers"]:
        if b"\x00" in value or b"\x00" in name:
            shown = printable(name.decode("latin-1"))
            return invalid(f"header {shown}: holds a NUL character"), None
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return invalid("header content-length: not a number"), None
    return None, length
