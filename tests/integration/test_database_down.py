"""An unreachable database answers 503 `{message, code}`, never a bare 500."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from jobnik_manager.app import create_app
from jobnik_manager.db import engine
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

from ..support.processes import free_port


@asynccontextmanager
async def _client_of_app_on(url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app in-process on the database at `url`, whatever its state."""
    db = Database(url)
    app = create_app(Settings(database_url=url), database=db)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://m") as client:
            yield client
    finally:
        await db.dispose()


async def test_unreachable_database_is_503(monkeypatch: pytest.MonkeyPatch) -> None:
    # A request waits this long for the database to come back before its 503 (1.5 s).
    monkeypatch.setattr(engine, "_PATIENCE", 0.2)
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nowhere"
    async with _client_of_app_on(url) as client:
        for method, path in (("GET", "/v1/jobs"), ("PATCH", "/v1/stages/t/tasks/dequeue")):
            response = await client.request(method, path)
            assert response.status_code == 503
            assert response.json()["code"] == "DATABASE_RELATED_ERROR"
        ready = await client.get("/readiness")
        assert ready.status_code == 503 and ready.json() == {
            "message": "the database cannot be reached",
            "code": "NOT_READY",
        }


async def test_a_database_behind_the_migrations_is_not_ready(tmp_path: Path) -> None:
    """Reachable but never migrated (an empty database): readiness says so in words."""
    async with _client_of_app_on(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}") as client:
        ready = await client.get("/readiness")
        assert ready.status_code == 503
        assert ready.json()["code"] == "NOT_READY"
        assert "jobnik-manager migrate" in ready.json()["message"]
