"""The first look at every request: text that cannot be stored, and how much may come.

It wraps the whole app, the fast lane included, so no route, model or store sees a
request it refuses. A path segment, query value or header holding a NUL character is
refused (400); a body larger than `max_body_bytes` is answered 413, before it is read
when its Content-Length says so, else as soon as the bytes that came exceed it; a body
that `body_scan` refuses gets that answer. Nothing is stored for a refused request.
What passes goes on with its body replayed, unchanged.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .body_scan import Refusal, invalid, larger_than, printable, scan, unstorable
from .errors import error_body
from .replay import replay

# Their bodies, if any, are read by no route.
_BODILESS = frozenset({"GET", "HEAD", "OPTIONS"})


class InputGuard:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_body_values: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_body_values = max_body_values

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal, length = _request_line(scope)
        if refusal is None and length is not None and length > self.max_body_bytes:
            refusal = self._too_large()
        if refusal is None:
            if length == 0 or scope["method"] in _BODILESS:
                await self.app(scope, receive, send)
                return
            body, refusal = await self._body(receive)
            if body is None and refusal is None:
                return  # the client left before it sent its body: no one to answer
            if refusal is None and body:
                refusal = scan(body, max_values=self.max_body_values)
            if refusal is None:
                await self.app(scope, replay(body or b"", True, receive), send)
                return
        response = JSONResponse(error_body(refusal.message, refusal.code), refusal.status)
        await response(scope, receive, send)

    async def _body(self, receive: Receive) -> tuple[bytes | None, Refusal | None]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None, None
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None, self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), None

    def _too_large(self) -> Refusal:
        return larger_than(self.max_body_bytes)


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
