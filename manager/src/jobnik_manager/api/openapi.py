"""The OpenAPI document as the service answers, checked by fuzzing it
(tests/integration/test_openapi_fuzz.py).

The routes document their own successes and the errors only they give (a route's 404,
409 LEASE_LOST, ...). The errors that come from the layers every request passes are
documented here, once, on every operation they can reach (docs/operations.md lists
them all): 400 for any bad input (where FastAPI would say 422), 413 past a size limit,
409 for a reused Idempotency-Key, 503 while the database is away, and 500.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from .errors import OJS_PREFIX, RETRY_AFTER_SECONDS

_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorMessage"}
_NO_BODY = frozenset({"get", "head", "options"})

BAD_INPUT = (
    "VALIDATION_ERROR: the request is malformed (a missing or unknown field or query "
    "parameter, a wrong type, a value out of range, a bad id, text that cannot be stored, "
    "nesting too deep); the message names each field. Or a rule of the entity's current "
    "state refuses it (ILLEGAL_*_STATUS_TRANSITION, *_IN_FINITE_STATE, ...)"
)
TOO_LARGE = (
    "PAYLOAD_TOO_LARGE: over a limit (body size, JSON values, tasks per call, tasks "
    "answered inline); the message says which and what to do instead"
)
KEY_REUSED = "IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used before with a different request"
UNAVAILABLE = "DATABASE_RELATED_ERROR: the database is unavailable; retry after Retry-After seconds"
NOT_READY = "NOT_READY: the manager cannot reach its database, or it is not at the latest revision"
UNKNOWN = "UNKNOWN_ERROR: a fault of the manager, which no input should cause"

_RETRY_AFTER = {
    "Retry-After": {
        "description": f"Seconds to wait before retrying ({RETRY_AFTER_SECONDS})",
        "schema": {"type": "string"},
    }
}


def install_openapi(app: FastAPI) -> None:
    """Serve `app`'s OpenAPI document with the errors that every route can answer."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            app.openapi_schema = with_errors(document)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def with_errors(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with every operation's errors as the service answers them."""
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            _document_operation(path, method, operation)
    schemas = document.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return document


def _document_operation(path: str, method: str, operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    if path.startswith(OJS_PREFIX):
        _document_ojs(responses)
        return
    # Bad input is answered 400 {message, code}, never FastAPI's 422 (`errors`).
    responses.pop("422", None)
    parameters = operation.get("parameters", [])
    for parameter in parameters:
        if parameter.get("in") == "query" and not parameter.get("required"):
            _not_null(parameter)
    names = {p["name"] for p in parameters}
    # The input guard refuses text that cannot be stored in any path, query or header.
    _add(responses, "400", BAD_INPUT)
    if method not in _NO_BODY or "should_return_tasks" in names:
        _add(responses, "413", TOO_LARGE)
    if "Idempotency-Key" in names:
        _add(responses, "409", KEY_REUSED)
    if path == "/readiness":
        _add(responses, "503", NOT_READY)
    elif path != "/liveness":  # the only operation that never opens the database
        _add(responses, "503", UNAVAILABLE, headers=_RETRY_AFTER)
    _add(responses, "500", UNKNOWN)


# The Open Job Spec's binding answers in its own media type and error object
# (api/errors.py): the statuses its refusals take, on every one of its operations.
OJS_MEDIA = "application/openjobspec+json"
_OJS_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "retryable"],
            "properties": {
                "code": {"type": "string"},
                "type": {"type": "string"},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
                "hint": {"type": "string"},
                "docs_url": {"type": "string"},
                "request_id": {"type": "string"},
            },
        }
    },
}
_OJS_REFUSALS = {
    "400": "invalid_request or invalid_payload: the request or its body is malformed",
    "404": "not_found: no such job, cron job or dead letter",
    "409": "conflict (the job's or worker's state does not allow it) or duplicate (its id "
    "or name is taken)",
    "413": "envelope_too_large: over the size limit",
    "422": "validation_error: a retry policy that cannot be",
    "500": "backend_error: a fault of the manager, which no input should cause",
    "503": "backend_error: the database is unavailable",
}


def _document_ojs(responses: dict[str, Any]) -> None:
    for answer in responses.values():
        content = answer.get("content") or {"application/json": {"schema": {}}}
        answer["content"] = {OJS_MEDIA: next(iter(content.values()))}
    for status, description in _OJS_REFUSALS.items():
        responses[status] = {
            "description": description,
            "content": {OJS_MEDIA: {"schema": _OJS_ERROR}},
        }


def _add(
    responses: dict[str, Any],
    status: str,
    description: str,
    *,
    headers: dict[str, Any] | None = None,
) -> None:
    """Document an error response, or add its description to the route's own."""
    response = responses.setdefault(status, {})
    known = response.get("description", "")
    code = description.partition(":")[0]
    # FastAPI's default description is the status's phrase; a route's may be a bare code.
    if known in ("", code, HTTPStatus(int(status)).phrase):
        response["description"] = description
    elif code not in known:
        response["description"] = f"{known}; {description}"
    response["content"] = {"application/json": {"schema": _ERROR_SCHEMA}}
    if headers:
        response["headers"] = headers


def _not_null(parameter: dict[str, Any]) -> None:
    """An optional query parameter without `null` among its types: a query string has no
    null, a parameter is left out instead (FastAPI documents `X | None = None` as X or
    null, and a client sending `null` would be refused)."""
    schema = parameter.get("schema", {})
    choices = schema.get("anyOf")
    if not choices:
        return
    kept = [c for c in choices if c.get("type") != "null"]
    if len(kept) == len(choices):
        return
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    parameter["schema"] = {**kept[0], **rest} if len(kept) == 1 else {**rest, "anyOf": kept}
