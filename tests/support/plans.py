"""Plans of the hot path's statements, as PostgreSQL makes them on a connection of the
hot path's own pool (its settings: no bitmap or sequential scans, generic plans), and
what they read."""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import Any

import pytest

from jobnik_manager.clock import SystemClock
from jobnik_manager.db import migrate
from jobnik_manager.db.direct import DirectStatement
from jobnik_manager.db.engine import Database

from ..conftest import app_client, outside_any_loop
from .api import Api
from .profiles import fresh_database


async def explain(db: Database, statement: DirectStatement, params: dict[str, Any]) -> Any:
    async with db.direct_transaction() as conn:
        rows = await conn.fetch(f"EXPLAIN (FORMAT JSON) {statement.sql}", *statement.args(params))
    plan = rows[0][0]
    return json.loads(plan) if isinstance(plan, str) else plan


def scans_of(plan: Any, table: str) -> list[tuple[str, str | None]]:
    """Every node that reads `table`: its type and the index it uses, if any."""
    found: list[tuple[str, str | None]] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Relation Name") == table:
            found.append((node["Node Type"], node.get("Index Name")))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found


def sorts_of(plan: Any, table: str) -> list[dict[str, Any]]:
    """The Sort nodes that sort rows read from `table` itself (not from a CTE of them)."""
    found: list[dict[str, Any]] = []

    def reads(node: dict[str, Any]) -> bool:
        # A node's own input, not the CTEs it carries (InitPlans: planned on their own).
        inputs = [c for c in node.get("Plans", []) if c.get("Parent Relationship") != "InitPlan"]
        return node.get("Relation Name") == table or any(reads(c) for c in inputs)

    def walk(node: dict[str, Any]) -> None:
        if node["Node Type"] == "Sort" and reads(node):
            found.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found


def claim_params(db: Database) -> dict[str, Any]:
    now = db.clock.now()
    return {
        "types": "hot",
        "n": 100,
        "now": now,
        "expires": now + timedelta(seconds=30),
        "seconds": 30.0,
        "worker": "w",
        "principal": None,
        "time": now.isoformat(),
    }


@contextmanager
def filled_database(
    request: pytest.FixtureRequest, fill: Callable[[Api, Database], Awaitable[None]]
) -> Iterator[str]:
    """The URL of a new PostgreSQL database, migrated and filled by `fill` (through the
    API, and directly), dropped afterwards."""
    with fresh_database(request) as url:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(migrate.upgrade, url).result()  # Alembic runs its own event loop

        async def filled() -> None:
            async with database_at(url) as db, app_client(db) as client:
                await fill(Api(client), db)

        outside_any_loop(filled())
        yield url


@asynccontextmanager
async def database_at(url: str) -> AsyncIterator[Database]:
    db = Database(url, clock=SystemClock())
    try:
        yield db
    finally:
        await db.dispose()
