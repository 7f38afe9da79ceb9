"""Authentication and authorization at the edge (JOBNIK_AUTH=on): a bearer token names a
principal (services.tokens), and the request's route, with the job, stage or task it
names, decides whether that principal may make it (domain.auth). 401 without a live
token, 403 for what its role may not do; the route itself then runs as usual, and reads
who asks (`domain.auth.acting`) for what it creates, lists and records.

A body that names what the rule needs (stage types, task ids, a cancel) is read whole
by the edge and parsed there only once the token is known to be live (api/edge.py); one
that cannot be read is refused as InputGuard would refuse it (400 VALIDATION_ERROR,
413), never raised as a 500.

Probes, the API documents and (unless JOBNIK_AUTH_METRICS is on) /metrics stay open.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.types import ASGIApp, Receive, Scope, Send

from jobnik_protocol.logs import log_context

from ..asgi import HttpMiddleware
from ..db.engine import Database
from ..domain.auth import (
    Action,
    Facts,
    Principal,
    Role,
    act_as,
    acting,
    allows,
    needs_facts,
    stop_acting,
)
from ..observe.http import RouteTemplates
from ..services import ownership, schedules, tokens
from .body_scan import Refusal, Unreadable, invalid, larger_than
from .edge import Inbound, Read, inbound
from .errors import database_away, error_response

_OPEN = {
    "/",
    "/liveness",
    "/readiness",
    "/docs",
    "/docs/oauth2-redirect",
    "/redoc",
    "/openapi.json",
    "/ui",  # the dashboard's page and assets hold no data; its API calls carry the token
    "/ui/",
    "/ojs/manifest",  # what the server implements, as /openapi.json
    "/ojs/v1/health",
}
# The documents' own files (scripts, styles).
_OPEN_PREFIXES = ("/static-offline-docs/", "/ui/assets/")
_STATUS = "/v1/tasks/{taskId}/status"
# Routes whose body names what the rule needs: stage types, task ids, a cancel.
_OJS_REPORTS = ("/ojs/v1/workers/ack", "/ojs/v1/workers/nack")
_OJS_BEATS = "/ojs/v1/workers/heartbeat"
_BODY_ROUTES = {
    "/v1/tasks/claim",
    "/v1/tasks/heartbeats",
    "/v1/tasks/reports",
    _STATUS,
    "/ojs/v1/workers/fetch",
    *_OJS_REPORTS,
    _OJS_BEATS,
}

# (method, route template) -> what the request does.
ACTIONS: dict[tuple[str, str], Action] = {
    ("GET", "/v1/jobs"): Action.LIST,
    ("GET", "/v1/stages"): Action.LIST,
    ("GET", "/v1/tasks"): Action.LIST,
    ("GET", "/v1/stage-types"): Action.LIST,  # queue figures over all jobs, as on /metrics
    ("GET", "/v1/stage-types/{stageType}/flow"): Action.LIST,
    ("GET", "/v1/workers"): Action.LIST,  # who claims, over all jobs, like the above
    ("GET", "/v1/dead-letters"): Action.LIST,  # a producer's own jobs' only
    # Over many jobs at once: for those who may retry any job.
    ("POST", "/v1/dead-letters/retry"): Action.RETRY,
    ("POST", "/v1/dead-letters/discard"): Action.RETRY,
    ("PUT", "/v1/stage-types/{stageType}/pause"): Action.QUEUES,
    ("DELETE", "/v1/stage-types/{stageType}/pause"): Action.QUEUES,
    ("PUT", "/v1/stage-types/{stageType}/limits"): Action.QUEUES,
    ("DELETE", "/v1/stage-types/{stageType}/limits"): Action.QUEUES,
    ("POST", "/v1/jobs"): Action.CREATE,
    ("POST", "/v1/jobs/{jobId}/stage"): Action.CREATE,
    ("POST", "/v1/stages/{stageId}/tasks"): Action.CREATE,
    ("GET", "/v1/jobs/{jobId}"): Action.READ,
    ("GET", "/v1/jobs/{jobId}/events"): Action.READ,
    ("GET", "/v1/jobs/{jobId}/stages"): Action.READ,
    ("GET", "/v1/jobs/{jobId}/assets"): Action.READ,
    ("GET", "/v1/stages/{stageId}"): Action.READ,
    ("GET", "/v1/stages/{stageId}/summary"): Action.READ,
    ("GET", "/v1/stages/{stageId}/tasks"): Action.READ,
    ("GET", "/v1/tasks/{taskId}"): Action.READ,
    ("PUT", "/v1/jobs/{jobId}/status"): Action.CONTROL,
    ("DELETE", "/v1/jobs/{jobId}"): Action.CONTROL,
    ("PATCH", "/v1/jobs/{jobId}/priority"): Action.EDIT,
    ("PATCH", "/v1/jobs/{jobId}/user-metadata"): Action.EDIT,
    ("PATCH", "/v1/stages/{stageId}/user-metadata"): Action.EDIT,
    ("PATCH", "/v1/tasks/{taskId}/user-metadata"): Action.ANNOTATE,
    ("PUT", "/v1/stages/{stageId}/status"): Action.APPROVE,
    ("POST", "/v1/jobs/{jobId}/retry"): Action.RETRY,
    ("PATCH", "/v1/stages/{stageType}/tasks/dequeue"): Action.WORK,
    ("POST", "/v1/tasks/claim"): Action.WORK,
    ("POST", "/v1/tasks/heartbeats"): Action.WORK,
    ("POST", "/v1/tasks/reports"): Action.WORK,
    ("POST", "/v1/tasks/{taskId}/heartbeat"): Action.WORK,
    ("POST", "/v1/tasks/{taskId}/events"): Action.WORK,
    ("POST", "/v1/tasks/{taskId}/assets"): Action.WORK,
    ("PUT", "/v1/tasks/{taskId}/job-result"): Action.WORK,
    ("PUT", "/v1/tasks/{taskId}/status"): Action.WORK,  # CONTROL when it cancels
    # A producer's own schedules; their jobs are the producer's too.
    ("GET", "/v1/schedules"): Action.LIST,
    ("GET", "/v1/schedules/{name}"): Action.READ,
    ("GET", "/v1/schedules/{name}/runs"): Action.READ,
    ("PUT", "/v1/schedules/{name}"): Action.CREATE,
    ("DELETE", "/v1/schedules/{name}"): Action.CONTROL,
    ("PUT", "/v1/schedules/{name}/pause"): Action.CONTROL,
    ("DELETE", "/v1/schedules/{name}/pause"): Action.CONTROL,
    ("POST", "/v1/schedules/{name}/run"): Action.CONTROL,
    # The Open Job Spec's binding: a job is a task in a job of its own.
    ("POST", "/ojs/v1/jobs"): Action.CREATE,
    ("POST", "/ojs/v1/jobs/batch"): Action.CREATE,
    ("GET", "/ojs/v1/jobs/{taskId}"): Action.READ,
    ("DELETE", "/ojs/v1/jobs/{taskId}"): Action.CONTROL,
    ("POST", "/ojs/v1/workers/fetch"): Action.WORK,
    ("POST", "/ojs/v1/workers/ack"): Action.WORK,
    ("POST", "/ojs/v1/workers/nack"): Action.WORK,
    ("POST", "/ojs/v1/workers/heartbeat"): Action.WORK,
    ("GET", "/ojs/v1/queues"): Action.LIST,
    ("GET", "/ojs/v1/queues/{stageType}/stats"): Action.LIST,
    ("POST", "/ojs/v1/queues/{stageType}/pause"): Action.QUEUES,
    ("POST", "/ojs/v1/queues/{stageType}/resume"): Action.QUEUES,
    ("GET", "/ojs/v1/events"): Action.LIST,
    ("GET", "/ojs/v1/cron"): Action.LIST,
    ("POST", "/ojs/v1/cron"): Action.CREATE,
    ("DELETE", "/ojs/v1/cron/{name}"): Action.CONTROL,
    ("DELETE", "/ojs/v1/admin/queues/{stageType}/jobs"): Action.QUEUES,
    ("POST", "/ojs/v1/admin/workers/{workerId}/quiet"): Action.QUEUES,
    ("POST", "/ojs/v1/admin/workers/{workerId}/terminate"): Action.QUEUES,
    ("GET", "/ojs/v1/dead-letter"): Action.LIST,
    ("POST", "/ojs/v1/dead-letter/{taskId}/retry"): Action.RETRY,
    ("DELETE", "/ojs/v1/dead-letter/{taskId}"): Action.RETRY,
    ("POST", "/ojs/v1/workflows"): Action.CREATE,
    ("GET", "/ojs/v1/workflows/{workflowId}"): Action.READ,
    ("DELETE", "/ojs/v1/workflows/{workflowId}"): Action.CONTROL,
    ("GET", "/v1/tokens"): Action.ADMIN,
    ("POST", "/v1/tokens"): Action.ADMIN,
    ("DELETE", "/v1/tokens/{name}"): Action.ADMIN,
}


def creator() -> str | None:
    """Who owns what this request creates: its token's name (None with auth off)."""
    principal = acting()
    return None if principal is None else principal.name


def listing_owner() -> str | None:
    """The owner a list is narrowed to: a producer sees its own jobs only."""
    principal = acting()
    return principal.name if principal is not None and principal.role is Role.PRODUCER else None


class Authenticator(HttpMiddleware):
    def __init__(
        self,
        app: ASGIApp,
        api: Any,
        routes: RouteTemplates,
        open_metrics: bool = True,
        *,
        max_body_bytes: int,
    ) -> None:
        super().__init__(app)
        self.api = api
        self.routes = routes
        self.open = _OPEN | ({"/metrics"} if open_metrics else set())
        self.max_body_bytes = max_body_bytes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path in self.open or path.startswith(_OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        if token is None:
            await _refuse(scope, receive, send, 401, "UNAUTHORIZED", "a bearer token is required")
            return
        route, params = self.routes.resolve(scope)
        action = ACTIONS.get((scope["method"], route))
        body = None
        if action is not None and route in _BODY_ROUTES:
            edge = inbound(scope)
            # All of it, up to the most any route takes: a rule must not be decided on
            # the part of a body it read. Its bytes only: parsing waits for a live token.
            read = (await edge.body()).read
            if read is Read.GONE:
                return  # the client left before it sent its body: no one to answer
            body = _Body(edge, read is Read.COMPLETE, self.max_body_bytes)
        # One transaction: the token, and what the rule needs of the entity named.
        db: Database = self.api.state.database
        try:
            found = await db.transaction(_lookup(token, action, route, params, body))
        except Exception as exc:
            # Out here the app's handlers cannot answer it: the database being away is
            # a 503 for the client to retry, not a server error.
            away = database_away(scope, exc)
            if away is None:
                raise
            await away(scope, receive, send)
            return
        principal = found.principal
        if principal is None:
            await _refuse(scope, receive, send, 401, "UNAUTHORIZED", "the token is not valid")
            return
        if found.refusal is not None:
            refusal = found.refusal
            await _refuse(scope, receive, send, refusal.status, refusal.code, refusal.message)
            return
        if found.action is None:  # no such route: the app answers 404 or 405
            await self._run(principal, scope, receive, send)
            return
        if not allows(principal, found.action, found.facts):
            said = f"a {principal.role} token may not do this ({found.action} {route})"
            await _refuse(scope, receive, send, 403, "FORBIDDEN", said)
            return
        await self._run(principal, scope, receive, send)

    async def _run(self, principal: Principal, scope: Scope, receive: Receive, send: Send) -> None:
        token = act_as(principal)
        try:
            # JSON log lines of the request (uvicorn's access line included) name it.
            with log_context(principal=principal.name):
                await self.app(scope, receive, send)
        finally:
            stop_acting(token)


@dataclass(frozen=True, slots=True)
class _Body:
    edge: Inbound
    complete: bool  # False: it went past the limit
    max_bytes: int

    async def parsed(self) -> Any:
        """Its JSON value, or the Refusal the guard and the route would answer it with:
        what a client sends must not make the parser raise past here."""
        if not self.complete:
            return larger_than(self.max_bytes)
        if not (await self.edge.body()).data:
            return None  # the route words what is missing
        value = self.edge.parsed()
        if isinstance(value, Unreadable):
            return invalid(value.message)
        return value


@dataclass(frozen=True, slots=True)
class _Found:
    """Who asks (None: no live token), what the request does and the facts the rule
    needs of it; or why its body is refused."""

    principal: Principal | None
    action: Action | None = None
    facts: Facts = field(default_factory=Facts)
    refusal: Refusal | None = None


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


def _lookup(
    token: str,
    action: Action | None,
    route: str,
    params: dict[str, str],
    body: _Body | None,
) -> Callable[[AsyncSession], Awaitable[_Found]]:
    async def find(s: AsyncSession) -> _Found:
        principal = await tokens.principal_of(s, token)
        if principal is None or action is None:
            return _Found(principal, action)
        doing, value = action, None
        # The status route's body says whether it reports or cancels; the others' are
        # read only when the rule depends on what they name.
        if body is not None and (route == _STATUS or needs_facts(principal, action)):
            value = await body.parsed()
            if isinstance(value, Refusal):
                return _Found(principal, action, refusal=value)
            if route == _STATUS and _field(value, "status") == "ABORTED":
                doing = Action.CONTROL
        if not needs_facts(principal, doing):
            return _Found(principal, doing)
        return _Found(principal, doing, await _facts(s, route, params, value))

    return find


async def _facts(s: AsyncSession, route: str, params: dict[str, str], body: Any) -> Facts:
    """`body`: the request's parsed body, for the routes whose body names the tasks."""
    if route == "/v1/stages/{stageType}/tasks/dequeue":
        return Facts(True, None, frozenset([params["stageType"]]))
    if route == "/v1/tasks/claim":
        types = _listed(_field(body, "stageTypes"))
        return Facts(True, None, frozenset(t for t in types if isinstance(t, str)))
    if route == "/ojs/v1/workers/fetch":
        queues = _listed(_field(body, "queues"))
        return Facts(True, None, frozenset(q for q in queues if isinstance(q, str)))
    if route in _OJS_REPORTS:
        return await ownership.of_tasks(s, _ids([_field(body, "job_id")]))
    if route == _OJS_BEATS:
        return await ownership.of_tasks(s, _ids(_listed(_field(body, "active_jobs"))))
    if route in ("/v1/tasks/heartbeats", "/v1/tasks/reports"):
        items = _listed(_field(body, route.rpartition("/")[2]))
        return await ownership.of_tasks(
            s, _ids(i.get("taskId") for i in items if isinstance(i, dict))
        )
    if route.startswith(("/v1/schedules/", "/ojs/v1/cron/")):
        return await schedules.owner_of(s, params["name"])
    named = {k: _ids([v]) for k, v in params.items()}
    if named.get("workflowId"):
        return await ownership.of_workflow(s, named["workflowId"][0])
    if named.get("taskId"):
        return await ownership.of_tasks(s, named["taskId"])
    if named.get("stageId"):
        return await ownership.of_stage(s, named["stageId"][0])
    if named.get("jobId"):
        return await ownership.of_job(s, named["jobId"][0])
    return Facts()


def _field(body: Any, name: str) -> Any:
    """A top-level field of a parsed body, None when there is none (the route then
    answers what is wrong with the body)."""
    return body.get(name) if isinstance(body, dict) else None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _ids(values: Iterable[object]) -> list[uuid.UUID]:
    ids = []
    for v in values:
        try:
            ids.append(uuid.UUID(str(v)))
        except ValueError:
            continue
    return ids


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
) -> None:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    response = error_response(scope, status, code, message, headers)
    await response(scope, receive, send)
