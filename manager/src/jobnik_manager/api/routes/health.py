"""Probes for orchestrators."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from ...db import migrate
from ...observe.exposition import CONTENT_TYPE, scrape
from ..deps import DatabaseDep

router = APIRouter(tags=["health"])


@router.get("/", include_in_schema=False)
async def home() -> HTMLResponse:
    """Where to go from the root: the API's documents (served from the package)."""
    return HTMLResponse(_HOME)


_HOME = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Jobnik manager</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>Jobnik manager</h1><ul>
<li><a href="/ui">Dashboard</a></li>
<li><a href="/docs">API reference (Swagger UI)</a></li>
<li><a href="/redoc">API reference (ReDoc)</a></li>
<li><a href="/openapi.json">OpenAPI document</a></li>
</ul></main></body></html>
"""


@router.get("/liveness")
async def liveness() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readiness", response_model=None)
async def readiness(db: DatabaseDep) -> dict[str, str] | JSONResponse:
    """Ready when the database answers and is at the revision this code expects."""
    try:
        at = await migrate.current(db.engine)
    except Exception:  # any failure to reach the database means not ready
        return _not_ready("the database cannot be reached")
    if at != migrate.head():
        return _not_ready(
            "the database is not at the latest revision: run `jobnik-manager migrate`"
        )
    return {"status": "ok"}


@router.get("/metrics", include_in_schema=False)
async def metrics(db: DatabaseDep, request: Request) -> Response:
    """Prometheus' text format (docs/observability.md lists what it holds)."""
    if not request.app.state.settings.metrics:
        return JSONResponse({"message": "metrics are off", "code": "NOT_FOUND"}, status_code=404)
    return Response(await scrape(db), media_type=CONTENT_TYPE)


def _not_ready(message: str) -> JSONResponse:
    return JSONResponse({"message": message, "code": "NOT_READY"}, status_code=503)
