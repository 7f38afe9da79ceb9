"""The calls workers make per task, as plain Starlette routes ahead of FastAPI's.

`PATCH /v1/stages/{stageType}/tasks/dequeue` and `PUT /v1/tasks/{taskId}/status` are
nearly all of a v1 worker's traffic, with `GET` of the task's stage and job where the
worker reads them around each task (the reference SDK's does); `POST /v1/tasks/claim`
and `POST /v1/tasks/reports` nearly all of an SDK worker's. FastAPI's dependency
solving and validation of a request cost as much CPU as the statement each runs (the
v1 drain takes nearly twice the manager's CPU per task through them), and sit between
a woken worker and its task. Each of these routes takes only a request that its
FastAPI route would accept as it stands: no query parameters, path parameters the
route's own checks pass, and for the others a JSON body (as the edge parsed it,
api/edge.py) that the route's model validates; it calls the route's own function with
it. Anything else it hands back to the app's router, which passes the fast routes by
this time and finds the FastAPI route, which answers it as ever, errors included. Being
routes of the app's router, they are matched by it, and what their functions raise is
answered by the app's exception handlers as from any route.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from pydantic import TypeAdapter, ValidationError
from starlette.routing import Match, Route, Router
from starlette.types import Receive, Scope, Send

from ..db.engine import Database
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
_PASSED = "jobnik.fast_lane.passed"  # handed on: the router is to pass the fast routes by


def install_fast_lane(app: FastAPI) -> None:
    """Put the fast routes ahead of FastAPI's in `app`'s router."""
    takes: dict[tuple[str, str], Take] = {
        # In the order the router tries them: an SDK worker's calls first.
        ("/v1/tasks/claim", "POST"): _claim,
        ("/v1/tasks/reports", "POST"): _reports,
        ("/v1/tasks/{taskId}/status", "PUT"): _report,
        ("/v1/stages/{stageType}/tasks/dequeue", "PATCH"): _dequeue,
        ("/v1/tasks/{taskId}", "GET"): _get_task,
        ("/v1/stages/{stageId}", "GET"): _get_stage,
        ("/v1/jobs/{jobId}", "GET"): _get_job,
    }
    documented: dict[str, frozenset[str]] = app.state.route_methods
    for (path, method), _ in takes.items():
        assert method.lower() in documented.get(path, ()), f"no route {method} {path}"
    fast = [FastRoute(path, method, take, app.router) for (path, method), take in takes.items()]
    app.router.routes[0:0] = fast


class FastRoute(Route):
    def __init__(self, path: str, method: str, take: Take, router: Router) -> None:
        super().__init__(path, _unused, methods=[method], include_in_schema=False)
        self.take = take
        self.router = router

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if _PASSED in scope:
            return Match.NONE, {}
        return super().matches(scope)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The router hands a route the requests of other methods on its path too (a
        # partial match): those are FastAPI's to refuse, as any other route's are.
        ours = scope["method"] in (self.methods or ())
        work = await self.take(scope, receive) if ours and not scope["query_string"] else None
        if work is None:
            # To FastAPI's route, as though this one were not there.
            scope[_PASSED] = True
            await self.router(scope, receive, send)
            return
        # What the route function raises goes, as from any route, to the app's exception
        # middleware around the router, and so to the app's handlers.
        response = await work
        await response(scope, receive, send)


async def _unused(request: Request) -> Response:
    raise AssertionError("a fast route answers in its handle()")  # pragma: no cover


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
