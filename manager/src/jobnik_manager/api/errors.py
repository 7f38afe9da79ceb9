"""Every error leaves the manager as `{message, code}`, or under /ojs/ in the Open Job
Spec's shape (`{"error": {code, message, retryable, ...}}`), whichever part of the
manager refuses it: one function words them all. No input yields a 5xx."""

from __future__ import annotations

import functools
import logging
import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute, APIRouter
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from ..db.failures import is_conflict, is_unavailable
from ..domain import ojs
from ..domain.errors import DomainError
from ..observe.http import RouteTemplates

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = "1"

_HTTP_CODES = {
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


OJS_PREFIX = "/ojs/"
OJS_REQUEST_ID = "jobnik.ojs_request_id"


def error_body(message: str, code: str) -> dict[str, str]:
    return {"message": message, "code": code}


def error_response(
    scope: Scope, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The answer to a refused request, in the dialect of its path."""
    if not scope["path"].startswith(OJS_PREFIX):
        return JSONResponse(error_body(message, code), status_code=status, headers=headers)
    spec_code = ojs.code_of(code, status)
    error: dict[str, Any] = {
        "code": spec_code,
        "type": "validation_error" if status == 422 else spec_code,
        "message": message,
        "retryable": status >= 500 or status == 429,
        "hint": _HINTS.get(spec_code, "See the message."),
        "docs_url": f"https://openjobspec.org/errors/{spec_code}",
    }
    if request_id := scope.get(OJS_REQUEST_ID):
        error["request_id"] = request_id
    return JSONResponse({"error": error}, status_code=status, headers=headers)


_HINTS = {
    "not_found": "Check the id: the job may never have existed, or retention removed it.",
    "conflict": "What it names (a job, a worker) is not in a state that allows this; read it.",
    "invalid_request": "Correct the field the message names and send the request again.",
    "invalid_payload": "Send a JSON object as the body.",
    "duplicate": "A job with this id exists already; read it, or push without an id.",
    "unauthorized": "Send a bearer token.",
    "forbidden": "This token's role may not do this.",
    "backend_error": "Try again shortly.",
}


def describe_errors(errors: Sequence[Any]) -> str:
    """Validation errors as one message: the first few, each with its location."""
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def documented_methods(request: Request) -> frozenset[str] | None:
    """The methods the OpenAPI document gives the request's path, or None if it has no
    such path. Where templates overlap, the one with the fewest parameters is the path's
    own (/v1/tasks/claim, not /v1/tasks/{taskId}). Read from the app's routes, which the
    document is made of (making the document itself costs a fifth of a second), and from
    the route template the request was resolved to (observe.http)."""
    paths = _route_methods(request.app)
    routes: RouteTemplates = request.app.state.routes
    template, _ = routes.resolve(request.scope)
    if template not in paths:
        return None
    path = request.scope["path"]
    twins = [t for t in _twins(tuple(paths))[template] if _template(t).fullmatch(path)]
    return frozenset(m.upper() for t in (template, *twins) for m in paths[t])


@functools.cache
def _twins(templates: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The other templates that some path matches as well as each, with as many
    parameters: a path takes the methods of all of them."""
    split = {t: t.split("/") for t in templates}

    def overlap(a: list[str], b: list[str]) -> bool:
        return len(a) == len(b) and all(
            x == y or x.startswith("{") or y.startswith("{") for x, y in zip(a, b, strict=True)
        )

    return {
        t: tuple(
            u
            for u in templates
            if u != t and u.count("{") == t.count("{") and overlap(split[t], split[u])
        )
        for t in templates
    }


def allowed_methods(request: Request) -> str | None:
    """The Allow of a 405. Starlette's names the methods of the first route it tried
    only, where a path has one route per method."""
    methods = documented_methods(request)
    return ", ".join(sorted(methods)) if methods else None


def route_methods(routers: Sequence[APIRouter]) -> dict[str, frozenset[str]]:
    """The documented routes' methods by path template, as the app is built."""
    known: dict[str, set[str]] = {}
    for router in routers:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.include_in_schema:
                known.setdefault(route.path_format, set()).update(route.methods or ())
    return {template: frozenset(m.lower() for m in methods) for template, methods in known.items()}


def _route_methods(app: Any) -> dict[str, frozenset[str]]:
    known: dict[str, frozenset[str]] = getattr(app.state, "route_methods", {})
    return known


@functools.cache
def _template(path: str) -> re.Pattern[str]:
    """A pattern of the paths that `path`, with its `{name}` segments, stands for."""
    parts = re.split(r"(\{[^}/]+\})", path)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


_DATABASE_ERRORS = (
    DBAPIError,
    sqlite3.Error,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
)


def database_away(scope: Scope, exc: BaseException) -> JSONResponse | None:
    """The 503 for an error that means the database is away (or a conflict still there
    after the retries, which is as passing); None for any other error."""
    if not (isinstance(exc, _DATABASE_ERRORS) and (is_unavailable(exc) or is_conflict(exc))):
        return None
    log.warning("database unavailable: %s", exc)
    return error_response(
        scope,
        503,
        "DATABASE_RELATED_ERROR",
        "The database is unavailable; try again shortly",
        {"Retry-After": RETRY_AFTER_SECONDS},
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        if exc.http_status >= 500:
            log.error("domain error %s: %s", exc.code, exc.message)
        return error_response(request.scope, exc.http_status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        message = describe_errors(exc.errors())
        return error_response(request.scope, 400, "VALIDATION_ERROR", message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(
            exc.status_code, "VALIDATION_ERROR" if exc.status_code == 400 else "HTTP_ERROR"
        )
        headers = exc.headers
        if exc.status_code == 405 and (allowed := allowed_methods(request)):
            headers = {**(headers or {}), "Allow": allowed}
        return error_response(request.scope, exc.status_code, code, str(exc.detail), headers)

    # The database being away is the server's trouble, not the request's: 503 with a
    # Retry-After, so clients and load balancers retry rather than give up. Such errors
    # reach here only once the transaction seam has waited for the database a while
    # (`db.engine`), or at once from a statement that may have run and is not run again
    # (a claim whose connection broke). The asyncpg and sqlite3 errors come from the
    # statements run on the drivers directly (`db.direct`, `db.sqlite_writer`), as
    # SQLAlchemy's come from the rest; a conflict still there after the seam's retries
    # is as passing.
    @app.exception_handler(DBAPIError)
    @app.exception_handler(sqlite3.Error)
    @app.exception_handler(asyncpg.PostgresError)
    @app.exception_handler(asyncpg.InterfaceError)
    @app.exception_handler(asyncpg.InternalClientError)
    @app.exception_handler(OSError)
    async def _database(request: Request, exc: Exception) -> JSONResponse:
        answer = database_away(request.scope, exc)
        return answer if answer is not None else await _unexpected(request, exc)

    # Errors raised in a middleware (the authenticator's token lookup) skip the handlers
    # by type and come here: the database being away is a 503 there too.
    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        answer = database_away(request.scope, exc)
        if answer is not None:
            return answer
        log.error("unhandled error", exc_info=exc)
        return error_response(request.scope, 500, "UNKNOWN_ERROR", "Internal Server Error")
