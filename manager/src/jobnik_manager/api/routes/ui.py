"""The dashboard: a page and its script and style sheet, shipped in the package
(jobnik_manager/ui), no build step and nothing from elsewhere. The page holds no data:
its script calls the API, with the bearer token the user gives when auth is on."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

UI_DIR = Path(__file__).resolve().parents[2] / "ui"
ASSETS_PATH = "/ui/assets"

router = APIRouter(tags=["ui"])


@router.get("/ui", include_in_schema=False)
@router.get("/ui/", include_in_schema=False)
async def dashboard() -> FileResponse:
    return FileResponse(UI_DIR / "index.html", headers={"Cache-Control": "no-cache"})


def assets() -> StaticFiles:
    """The script and style sheet, mounted at ASSETS_PATH."""
    return StaticFiles(directory=UI_DIR)
