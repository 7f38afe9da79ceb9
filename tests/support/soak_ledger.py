"""The soak's own count of the event log: a statement trigger on `events` (in the
soak's own database) appends what each insert carried, so retention deleting finished
jobs with their events takes nothing from the count; and queries that ride out the
database's restarts."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import asyncpg

LEDGER = """
CREATE TABLE soak_moves (
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    stage_type text, from_status text, to_status text, reason text, n int NOT NULL);
CREATE TABLE soak_settlements (
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    task_id uuid, lease_id uuid, to_status text);
CREATE FUNCTION soak_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO soak_moves (stage_type, from_status, to_status, reason, n)
    SELECT s.type, e.from_status, e.to_status,
           CASE WHEN e.reason IN ('lease expired', 'timed out') THEN e.reason END, count(*)
    FROM new_rows e LEFT JOIN stages s ON s.id = e.stage_id
    WHERE e.entity = 'TASK' AND e.to_status IS NOT NULL
    GROUP BY 1, 2, 3, 4;
    INSERT INTO soak_settlements (task_id, lease_id, to_status)
    SELECT e.task_id, e.lease_id, e.to_status FROM new_rows e
    WHERE e.entity = 'TASK' AND e.from_status = 'IN_PROGRESS';
    RETURN NULL;
END $$;
CREATE TRIGGER soak_log AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION soak_log();
"""


def asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def install_ledger(database_url: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await conn.execute(LEDGER)
    finally:
        await conn.close()


async def ledger_query(database_url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    """`sql` on the soak's database, asked again while the database restarts."""
    deadline = time.monotonic() + 120
    while True:
        try:
            conn = await asyncpg.connect(asyncpg_dsn(database_url), timeout=5)
            try:
                rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
                return rows
            finally:
                await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


def timestamp(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)
