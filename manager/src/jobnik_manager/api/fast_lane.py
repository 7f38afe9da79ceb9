"""The calls workers make per task, taken past FastAPI's routing.

`PATCH /v1/stages/{stageType}/tasks/dequeue` and `PUT /v1/tasks/{taskId}/status` are
nearly all of a v1 worker's traffic; `POST /v1/tasks/claim` and `POST /v1/tasks/reports`
nearly all of an SDK worker's. FastAPI's routing (every route's pattern tried in turn),
dependency solving and exception middleware cost as much CPU as the statement each
runs, and sit between a woken worker and its task. This middleware matches those paths
itself, checks the request as the route would, and calls the route's own function; it
takes only a request that route would accept as it stands: no query parameters, and
for the others a JSON body that the route's model validates. Anything else (other
routes, query parameters, other content types, invalid input) goes on to FastAPI
untouched, so it is answered as before, errors included. The errors the route
functions raise are answered by the app's own exception handlers, found as Starlette
finds them; what none handles goes up to the server error middleware, as from a route.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from pydantic import TypeAdapter, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from ..db.engine import Database
from ..dispatch.wakeups import ReadyWaiters
from .body_scan import Refusal, Unreadable
from .edge import Read, inbound
from .routes.stages import dequeue
from .routes.tasks import claim_batch, report_batch, report_task_status
from .schemas import BatchReport, ClaimRequest, Inbound, TaskStatusReport

# Path parameters as Starlette's `{name}` matches them: one segment, not empty.
_DEQUEUE = re.compile(r"/v1/stages/([^/]+)/tasks/dequeue")
_STATUS = re.compile(r"/v1/tasks/([^/]+)/status")
_MAX_STAGE_TYPE = 50  # the dequeue route's Path(max_length=50)
_task_id = TypeAdapter(uuid.UUID)
M = TypeVar("M", bound=Inbound)
_CLAIM, _REPORTS = "/v1/tasks/claim", "/v1/tasks/reports"


class FastLane:
    def __init__(self, app: ASGIApp, api: FastAPI) -> None:
        self.app = app
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            method = scope["method"]
            if method == "PATCH" and not scope["query_string"]:
                if (m := _DEQUEUE.fullmatch(scope["path"])) and len(m[1]) <= _MAX_STAGE_TYPE:
                    await self._answer(scope, receive, send, dequeue(self._db(), m[1]))
                    return
            elif method == "PUT" and (m := _STATUS.fullmatch(scope["path"])):
                await self._report(scope, receive, send, m[1])
                return
            elif method == "POST" and not scope["query_string"]:
                if scope["path"] == _CLAIM:
                    await self._claim(scope, receive, send)
                    return
                if scope["path"] == _REPORTS:
                    await self._reports(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    def _db(self) -> Database:
        db: Database = self.api.state.database
        return db

    async def _claim(self, scope: Scope, receive: Receive, send: Send) -> None:
        payload = await self._parsed(scope, receive, send, ClaimRequest)
        if payload is None:
            return
        waiters: ReadyWaiters = self.api.state.waiters
        # A long poll asks the request whether its client is still there.
        request = Request(scope, receive)
        await self._answer(scope, receive, send, claim_batch(request, self._db(), waiters, payload))

    async def _reports(self, scope: Scope, receive: Receive, send: Send) -> None:
        payload = await self._parsed(scope, receive, send, BatchReport)
        if payload is not None:
            await self._answer(scope, receive, send, report_batch(self._db(), payload))

    async def _report(self, scope: Scope, receive: Receive, send: Send, task_id: str) -> None:
        try:
            taskId = _task_id.validate_python(task_id)
        except ValidationError:
            await self.app(scope, receive, send)  # the route words the error
            return
        payload = await self._parsed(scope, receive, send, TaskStatusReport)
        if payload is not None:
            work = report_task_status(self._db(), taskId, payload)
            await self._answer(scope, receive, send, work)

    async def _parsed(self, scope: Scope, receive: Receive, send: Send, model: type[M]) -> M | None:
        """The body as `model`; or None, the request having gone on to the routes (which
        word every error as the API does)."""
        payload = await _payload(scope, model)
        if payload is None:
            await self.app(scope, receive, send)
        return payload

    async def _answer(self, scope: Scope, receive: Receive, send: Send, work: Any) -> None:
        try:
            response: Response = await work
        except Exception as exc:
            handler = _handler(self.api, exc)
            if handler is None:
                raise  # to the server error middleware, as from a route
            response = await handler(Request(scope, receive), exc)
        await response(scope, receive, send)


def _handler(api: FastAPI, exc: Exception) -> Any:
    """The app's handler of `exc` as Starlette's exception middleware finds it; the one
    of Exception belongs to the server error middleware, as in FastAPI's stack."""
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in api.exception_handlers:
            return api.exception_handlers[cls]
    return None


async def _payload(scope: Scope, model: type[M]) -> M | None:
    """The body, as the edge parsed it, as the route would validate it; or None to leave
    it to the route."""
    content_types = [v for k, v in scope["headers"] if k == b"content-type"]
    edge = inbound(scope)
    if content_types != [b"application/json"] or edge is None:
        return None
    body = await edge.body()
    if body.read is not Read.COMPLETE or not body.data:
        return None
    value = edge.parsed()
    if isinstance(value, (Refusal, Unreadable)):
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None
