"""HTTP requests by route template and status, counted around the whole app (the fast
lane's calls included)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .metrics import HTTP_REQUESTS, HTTP_SECONDS


class RequestMetrics:
    """Counts each request under the path template it matches (`/v1/jobs/{jobId}`), so
    that ids do not each make a series of their own; any other path is "other"."""

    def __init__(self, app: ASGIApp, templates: Iterable[str]) -> None:
        self.app = app
        self._routes = [
            (re.compile(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(t)) + "$"), t)
            for t in sorted(templates, key=lambda t: (t.count("{"), -len(t)))
        ]

    def _route(self, path: str) -> str:
        for pattern, template in self._routes:
            if pattern.match(path):
                return template
        return "other"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500  # unless the app answers

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            route, method = self._route(scope["path"]), scope["method"]
            HTTP_REQUESTS.labels(method, route, str(status)).inc()
            HTTP_SECONDS.labels(method, route).observe(time.perf_counter() - began)
