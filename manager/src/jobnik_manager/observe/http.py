"""Around every request: counted by route template and status, and, for JSON logs,
logged with the ids its path names."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, MutableMapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobnik_protocol.logs import log_context

from ..asgi import HttpMiddleware
from .metrics import HTTP_REQUESTS, HTTP_SECONDS

# A path parameter's name, as the log fields name the ids.
_LOG_FIELDS = {
    "jobId": "job_id",
    "stageId": "stage_id",
    "taskId": "task_id",
    "stageType": "stage_type",
}


# Where a request's scope holds its route as `RouteTemplates.resolve` found it.
ROUTE_KEY = "jobnik.route"


class RouteTemplates:
    """Which route template a path matches (`/v1/jobs/{jobId}`), so that ids do not each
    make a series of their own, and the parameters it names. The app has one; what reads
    a request's route (metrics, traces, authentication, the routes' checks) asks it of
    the request's scope, where the first to ask leaves it for the others."""

    def __init__(self, templates: Iterable[str]) -> None:
        # Literal paths first (/v1/tasks/claim before /v1/tasks/{taskId}), then the most
        # specific. A path is tried only against the templates of its depth and first
        # two segments (a parameter matches one segment): scanning all of them cost a
        # read by key 3% of the manager's CPU.
        ordered = sorted(templates, key=lambda t: (t.count("{"), -len(t)))
        self._literal = {t: t for t in ordered if "{" not in t}
        # By depth and first two segments, each list in that order; a template with a
        # parameter there is a candidate for every path of its depth, in its place.
        keyed = [(_bucket(t), re.compile(_pattern(t)), t) for t in ordered if "{" in t]
        self._by_prefix: dict[tuple[int, str], list[tuple[re.Pattern[str], str]]] = {
            key: [] for key, _p, _t in keyed if "{" not in key[1]
        }
        for (depth, prefix), pattern, t in keyed:
            loose = "{" in prefix
            for key in self._by_prefix if loose else [(depth, prefix)]:
                if key[0] == depth and key[1]:
                    self._by_prefix[key].append((pattern, t))
            if loose:  # and for paths of its depth whose prefix no other template has
                self._by_prefix.setdefault((depth, ""), []).append((pattern, t))

    def match(self, path: str) -> tuple[str, dict[str, str]]:
        if (literal := self._literal.get(path)) is not None:
            return literal, {}
        depth, prefix = _bucket(path)
        candidates = self._by_prefix.get((depth, prefix))
        if candidates is None:
            candidates = self._by_prefix.get((depth, ""), [])
        for pattern, template in candidates:
            if m := pattern.fullmatch(path):
                return template, m.groupdict()
        return "other", {}

    def resolve(self, scope: MutableMapping[str, Any]) -> tuple[str, dict[str, str]]:
        """The request's route template and parameters, matched once per request."""
        found: tuple[str, dict[str, str]] | None = scope.get(ROUTE_KEY)
        if found is None:
            found = scope[ROUTE_KEY] = self.match(scope["path"])
        return found


def _bucket(path: str) -> tuple[int, str]:
    """A path's (or template's) depth and first two segments."""
    return path.count("/"), "/".join(path.split("/", 3)[:3])


def _pattern(template: str) -> str:
    parts = re.split(r"\{(\w+)\}", template)
    # re.split alternates literal text and parameter names.
    return "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts)
    )


class RequestMetrics(HttpMiddleware):
    def __init__(self, app: ASGIApp, routes: RouteTemplates, log_ids: bool = False) -> None:
        super().__init__(app)
        self.routes = routes
        self.log_ids = log_ids

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        began = time.perf_counter()
        route, params = self.routes.resolve(scope)
        status = 500  # unless the app answers

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if self.log_ids and params:
                ids = {_LOG_FIELDS[k]: v for k, v in params.items() if k in _LOG_FIELDS}
                with log_context(**ids):
                    await self.app(scope, receive, sent)
            else:
                await self.app(scope, receive, sent)
        finally:
            _record(scope["method"], route, status, time.perf_counter() - began)


# The series of each method, route and status, as `labels` finds them (which costs as
# much as the rest of the counting): there are as many as the registry holds.
_requests: dict[tuple[str, str, int], Any] = {}
_seconds: dict[tuple[str, str], Any] = {}


def _record(method: str, route: str, status: int, seconds: float) -> None:
    counter = _requests.get((method, route, status))
    if counter is None:
        counter = _requests[method, route, status] = HTTP_REQUESTS.labels(
            method, route, str(status)
        )
    counter.inc()
    histogram = _seconds.get((method, route))
    if histogram is None:
        histogram = _seconds[method, route] = HTTP_SECONDS.labels(method, route)
    histogram.observe(seconds)
