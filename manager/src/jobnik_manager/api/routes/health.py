"""Probes for orchestrators."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..deps import DatabaseDep

router = APIRouter(tags=["health"])


@router.get("/liveness")
async def liveness() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readiness", response_model=None)
async def readiness(db: DatabaseDep) -> dict[str, str] | JSONResponse:
    try:
        await db.ping()
    except Exception as exc:  # any failure to reach the database means not ready
        return JSONResponse(
            {"message": f"database unreachable: {type(exc).__name__}", "code": "NOT_READY"},
            status_code=503,
        )
    return {"status": "ok"}
