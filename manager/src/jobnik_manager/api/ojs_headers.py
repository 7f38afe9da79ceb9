"""What every answer under /ojs/ carries, as the Open Job Spec's HTTP binding asks:
`Content-Type: application/openjobspec+json` (refusals included, whichever part of the
manager words them), `OJS-Version`, and `X-Request-Id` (the client's, when it sent a
usable one, else one made here; refusals name it too). Outside every other middleware,
so nothing answers an /ojs/ request without them."""

from __future__ import annotations

import re

from starlette.types import Message, Receive, Scope, Send
from uuid6 import uuid7

from ..asgi import HttpMiddleware
from ..domain.ojs import SPEC_VERSION
from .errors import OJS_PREFIX, OJS_REQUEST_ID

MEDIA_TYPE = b"application/openjobspec+json"
_USABLE_ID = re.compile(rb"[A-Za-z0-9_.:\-]{1,128}")
_REPLACED = frozenset({b"content-type", b"ojs-version", b"x-request-id"})


class OjsHeaders(HttpMiddleware):
    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not scope["path"].startswith(OJS_PREFIX):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"")
        request_id = given if _USABLE_ID.fullmatch(given) else f"req_{uuid7()}".encode()
        scope[OJS_REQUEST_ID] = request_id.decode()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k not in _REPLACED]
                if message["status"] != 204:
                    headers.append((b"content-type", MEDIA_TYPE))
                headers += [(b"ojs-version", SPEC_VERSION.encode()), (b"x-request-id", request_id)]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)
