"""The calls workers make per task, answered ahead of FastAPI's app.

`PATCH /v1/stages/{stageType}/tasks/dequeue` and `PUT /v1/tasks/{taskId}/status` are
nearly all of a v1 worker's traffic, with `GET` of the task's stage and job where the
worker reads them around each task (the reference SDK's does); `POST /v1/tasks/claim`
and `POST /v1/tasks/reports` nearly all of an SDK worker's. FastAPI's dependency
solving and validation of a request cost as much CPU as the statement each runs (the
v1 drain takes nearly twice the manager's CPU per task through them), and its own
middlewares and router (exceptions, exit stacks, body limits, the routes tried in turn)
a fifth of a read by key's. These sit between a woken worker and its task.

`FastLane` is the innermost of the manager's middlewares: a request has been counted,
authenticated and guarded (api/guard.py) when it gets here, and its route template is
the one the others resolved (observe/http.RouteTemplates). It takes only a request that
its FastAPI route would accept as it stands: no query parameters, path parameters the
route's own checks pass, and for the others a JSON body (as the edge parsed it,
api/edge.py) that the route's model validates; it calls the route's own function with
it. Anything else goes on to FastAPI's app, whose route answers it as ever, errors
included. What a route function raises is answered by the app's handler for its type,
as FastAPI's exception middleware would; an error with no handler but the catch-all's
goes on up to the app's outermost middleware, as from any route.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from pydantic import TypeAdapter, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from ..asgi import HttpMiddleware
from ..db.engine import Database
from ..observe.http import RouteTemplates
from ..settings import Settings
from .body_scan import Refusal, Unreadable
from .deps import InlineTasks
from .edge import Read, inbound
from .routes.jobs import get_job
from .routes.stages import dequeue, get_stage
from .routes.tasks import claim_batch, get_task, report_batch, report_task_status
from .schemas import BatchReport, ClaimRequest, Inbound, TaskStatusReport

_MAX_STAGE_TYPE = 50  # the dequeue route's Path(max_length=50)
_id = TypeAdapter(uuid.UUID)
M = TypeVar("M", bound=Inbound)
# What a fast route's function answers with: the route function's call, or None to hand
# the request to the FastAPI route.
Take = Callable[[Scope, Receive], Awaitable[Awaitable[Response] | None]]
# Each answered by the app's outermost middleware, after its handler answers (Starlette's
# rule): they are not looked up here.
_CATCH_ALL = (500, Exception)


def install_fast_lane(app: FastAPI, routes: RouteTemplates) -> None:
    """Answer the fast routes ahead of `app`'s own middlewares and router; to be added
    before the manager's other middlewares (the first added is the innermost)."""
    takes: dict[tuple[str, str], Take] = {
        ("/v1/tasks/claim", "POST"): _claim,
        ("/v1/tasks/reports", "POST"): _reports,
        ("/v1/tasks/{taskId}/status", "PUT"): _report,
        ("/v1/stages/{stageType}/tasks/dequeue", "PATCH"): _dequeue,
        ("/v1/tasks/{taskId}", "GET"): _get_task,
        ("/v1/stages/{stageId}", "GET"): _get_stage,
        ("/v1/jobs/{jobId}", "GET"): _get_job,
    }
    documented: dict[str, frozenset[str]] = app.state.route_methods
    for path, method in takes:
        assert method.lower() in documented.get(path, ()), f"no route {method} {path}"
    app.add_middleware(FastLane, api=app, routes=routes, takes=takes)


class FastLane(HttpMiddleware):
    def __init__(
        self,
        app: ASGIApp,
        *,
        api: FastAPI,
        routes: RouteTemplates,
        takes: Mapping[tuple[str, str], Take],
    ) -> None:
        super().__init__(app)
        self.api = api
        self.routes = routes
        self.takes = takes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = None
        if not scope["query_string"]:
            template, params = self.routes.resolve(scope)
            take = self.takes.get((template, scope["method"]))
            if take is not None:
                scope["path_params"] = params
                response = await self._answer(take, scope, receive)
        if response is None:
            await self.app(scope, receive, send)
        else:
            await response(scope, receive, send)

    async def _answer(self, take: Take, scope: Scope, receive: Receive) -> Response | None:
        """The route function's answer, or None if `take` hands the request on."""
        try:
            work = await take(scope, receive)
            return None if work is None else await work
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(Request(scope, receive), exc)
            assert isinstance(response, Response)
            return response

    def _handler(self, exc: Exception) -> Callable[[Request, Exception], Any] | None:
        """The app's handler for `exc`'s type or its nearest base that has one, as
        FastAPI's exception middleware finds it (the app's handlers are all async)."""
        handlers = self.api.exception_handlers
        for cls in type(exc).__mro__:
            if cls in handlers and cls not in _CATCH_ALL:
                return handlers[cls]
        return None


def _db(scope: Scope) -> Database:
    db: Database = scope["app"].state.database
    return db


async def _dequeue(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    stage_type: str = scope["path_params"]["stageType"]
    if len(stage_type) > _MAX_STAGE_TYPE:
        return None
    return dequeue(_db(scope), stage_type)


def _path_id(scope: Scope, name: str) -> uuid.UUID | None:
    """The path's id parameter, or None to let the route word the error."""
    try:
        return _id.validate_python(scope["path_params"][name])
    except ValidationError:
        return None


async def _report(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    task_id = _path_id(scope, "taskId")
    if task_id is None:
        return None
    payload = await _payload(scope, TaskStatusReport)
    return None if payload is None else report_task_status(_db(scope), task_id, payload)


async def _get_task(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    task_id = _path_id(scope, "taskId")
    return None if task_id is None else get_task(_db(scope), task_id)


async def _get_stage(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    stage_id = _path_id(scope, "stageId")
    if stage_id is None:
        return None
    settings: Settings = scope["app"].state.settings
    return _response(get_stage(_db(scope), InlineTasks(settings.max_inline_tasks), stage_id))


async def _get_job(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    job_id = _path_id(scope, "jobId")
    return None if job_id is None else _response(get_job(_db(scope), job_id))


async def _response(answer: Awaitable[object]) -> Response:
    """A read route's answer, which without query parameters is always a Response."""
    response = await answer
    assert isinstance(response, Response)
    return response


async def _claim(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    payload = await _payload(scope, ClaimRequest)
    if payload is None:
        return None
    state = scope["app"].state
    # A long poll asks the request whether its client is still there.
    return claim_batch(Request(scope, receive), _db(scope), state.waiters, payload, state.sightings)


async def _reports(scope: Scope, receive: Receive) -> Awaitable[Response] | None:
    payload = await _payload(scope, BatchReport)
    return None if payload is None else report_batch(_db(scope), payload)


async def _payload(scope: Scope, model: type[M]) -> M | None:
    """The body, as the edge parsed it, as the route would validate it; or None to leave
    it to the route."""
    content_types = [v for k, v in scope["headers"] if k == b"content-type"]
    if content_types != [b"application/json"]:
        return None
    edge = inbound(scope)
    body = await edge.body()
    if body.read is not Read.COMPLETE or not body.data:
        return None
    value: Any = edge.parsed()
    if isinstance(value, (Refusal, Unreadable)):
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None
