"""Every error leaves the manager as `{message, code}`; no input yields a 5xx."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..db.failures import is_conflict, is_unavailable
from ..domain.errors import DomainError

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = "1"

_HTTP_CODES = {
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def error_body(message: str, code: str) -> dict[str, str]:
    return {"message": message, "code": code}


def describe_errors(errors: Sequence[Any]) -> str:
    """Validation errors as one message: the first few, each with its location."""
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(_: Request, exc: DomainError) -> JSONResponse:
        if exc.http_status >= 500:
            log.error("domain error %s: %s", exc.code, exc.message)
        return JSONResponse(error_body(exc.message, exc.code), status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            error_body(describe_errors(exc.errors()), "VALIDATION_ERROR"), status_code=400
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(
            exc.status_code, "VALIDATION_ERROR" if exc.status_code == 400 else "HTTP_ERROR"
        )
        return JSONResponse(
            error_body(str(exc.detail), code), status_code=exc.status_code, headers=exc.headers
        )

    # The database being away is the server's trouble, not the request's: 503 with a
    # Retry-After, so clients and load balancers retry rather than give up. Such errors
    # reach here only once the transaction seam has waited for the database a while
    # (`db.engine`). The asyncpg errors come from the statements run on it directly
    # (`db.direct`), as SQLAlchemy's come from the rest; a conflict still there after
    # the seam's retries is as passing.
    @app.exception_handler(DBAPIError)
    @app.exception_handler(asyncpg.PostgresError)
    @app.exception_handler(asyncpg.InterfaceError)
    @app.exception_handler(OSError)
    async def _database(request: Request, exc: Exception) -> JSONResponse:
        if not (is_unavailable(exc) or is_conflict(exc)):
            return await _unexpected(request, exc)
        log.warning("database unavailable: %s", exc)
        return JSONResponse(
            error_body("The database is unavailable; try again shortly", "DATABASE_RELATED_ERROR"),
            status_code=503,
            headers={"Retry-After": RETRY_AFTER_SECONDS},
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=exc)
        return JSONResponse(error_body("Internal Server Error", "UNKNOWN_ERROR"), status_code=500)
