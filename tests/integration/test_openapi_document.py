"""The OpenAPI document agrees with the service where a fuzzer found they disagreed
(test_openapi_fuzz.py runs the fuzzer itself, in the slow tier): dates refuse numbers, a
405 names every method of its path, and every error an operation answers is documented
for it, 400 and never 422."""

from __future__ import annotations

from functools import cache
from typing import Any

import httpx
import pytest

from jobnik_manager.app import create_app
from jobnik_manager.settings import Settings

ANY_ID = "3fa85f64-5717-4562-b3fc-2c963f66afa6"


@cache
def document() -> dict[str, Any]:
    """The document as the app serves it; the database behind this app is never opened."""
    app = create_app(Settings(database_url="sqlite+aiosqlite://", maintenance=False))
    return app.openapi()


# The disagreements the fuzzer found, as plain cases.


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/tasks"])
@pytest.mark.parametrize("name", ["from_date", "end_date"])
async def test_a_number_for_a_date_time_is_bad_input(
    client: httpx.AsyncClient, path: str, name: str
) -> None:
    response = await client.get(path, params={name: "0.5"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert name in body["message"]
    assert (await client.get(path, params={name: "2026-11-24T10:00:00Z"})).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/jobs", "GET, POST"),
        ("POST", f"/v1/jobs/{ANY_ID}", "DELETE, GET"),
        ("DELETE", f"/v1/stages/{ANY_ID}/tasks", "GET, POST"),
        ("GET", f"/v1/tasks/{ANY_ID}/heartbeat", "POST"),
        ("POST", "/liveness", "GET"),
        ("PUT", "/v1/tasks/claim", "POST"),
        ("GET", "/v1/tasks/claim", "POST"),
        ("GET", "/v1/tasks/reports", "POST"),
    ],
)
async def test_a_405_allows_every_method_of_its_path(
    client: httpx.AsyncClient, method: str, path: str, allowed: str
) -> None:
    response = await client.request(method, path)
    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert response.headers["allow"] == allowed


def _responses(method: str, path: str) -> dict[str, Any]:
    return document()["paths"][path][method]["responses"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("post", "/v1/jobs", "409", "IDEMPOTENCY_KEY_REUSED"),
        ("post", "/v1/stages/{stageId}/tasks", "409", "IDEMPOTENCY_KEY_REUSED"),
        ("put", "/v1/tasks/{taskId}/status", "409", "LEASE_LOST"),
        ("post", "/v1/jobs/{jobId}/retry", "409", "JOB_NOT_FAILED"),
        ("post", "/v1/jobs", "413", "PAYLOAD_TOO_LARGE"),
        ("get", "/v1/stages/{stageId}", "413", "PAYLOAD_TOO_LARGE"),
        ("get", "/v1/jobs", "400", "VALIDATION_ERROR"),
        ("get", "/v1/jobs", "503", "DATABASE_RELATED_ERROR"),
        ("get", "/readiness", "503", "NOT_READY"),
    ],
)
def test_errors_are_documented_for_their_operations(
    method: str, path: str, status: str, code: str
) -> None:
    response = _responses(method, path)[status]
    assert code in response["description"]
    error = response["content"]["application/json"]["schema"]
    assert error == {"$ref": "#/components/schemas/ErrorMessage"}


def test_bad_input_is_documented_as_400_not_422() -> None:
    for path, operations in document()["paths"].items():
        if path.startswith("/ojs/"):
            continue  # the Open Job Spec's statuses, below
        for method, operation in operations.items():
            assert "422" not in operation["responses"], (method, path)
            assert "400" in operation["responses"], (method, path)
    assert "HTTPValidationError" not in document()["components"]["schemas"]
    assert "Retry-After" in _responses("put", "/v1/tasks/{taskId}/status")["503"]["headers"]


def test_the_open_job_spec_binding_is_documented_in_its_media_type_and_error_object() -> None:
    ojs = {p: ops for p, ops in document()["paths"].items() if p.startswith("/ojs/")}
    assert {"/ojs/manifest", "/ojs/v1/jobs", "/ojs/v1/workers/fetch"} <= set(ojs)
    for path, operations in ojs.items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                assert list(response["content"]) == ["application/openjobspec+json"], (
                    method,
                    path,
                    status,
                )
            refused = operation["responses"]["400"]["content"]["application/openjobspec+json"]
            assert refused["schema"]["required"] == ["error"], (method, path)
            assert "422" in operation["responses"]  # a retry policy that cannot be
