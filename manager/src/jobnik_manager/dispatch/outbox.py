"""Writing outbox rows inside the caller's transaction.

Nothing is written unless the database was opened with the outbox on (a broker is
configured); without one the manager behaves exactly as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ..db.deferred import defer
from ..db.engine import OUTBOX_ON, OUTBOX_WRITTEN
from ..db.models import OUTBOX
from .wakeups import note_ready


def enabled(s: AsyncSession) -> bool:
    return bool(s.info.get(OUTBOX_ON))


def ready_key(stage_type: str) -> str:
    return f"task.ready.{stage_type}"


def lifecycle_key(entity: str, status: str) -> str:
    return f"{entity.lower()}.{status.lower()}"


async def tasks_ready(
    s: AsyncSession, stage_type: str, job_id: uuid.UUID, stage_id: uuid.UUID, now: datetime
) -> None:
    """Tasks of `stage_type` became claimable: wake that type's workers (long-polling
    claims here and on other replicas, and over RabbitMQ when configured)."""
    note_ready(s, (stage_type,))
    await publish_later(
        s,
        [
            (
                ready_key(stage_type),
                {"stageType": stage_type, "jobId": str(job_id), "stageId": str(stage_id)},
            )
        ],
        now,
    )


async def publish_later(
    s: AsyncSession, messages: Iterable[tuple[str, dict[str, Any]]], now: datetime
) -> None:
    if not enabled(s):
        return
    rows = [{"routing_key": key, "payload": body, "created_at": now} for key, body in messages]
    if rows:
        defer(s, OUTBOX, rows)
        s.info[OUTBOX_WRITTEN] = True


async def stage_awaits_approval(
    s: AsyncSession,
    *,
    job_id: uuid.UUID,
    stage_id: uuid.UUID,
    stage_type: str,
    now: datetime,
) -> None:
    """`stage.waiting`: a WAITING stage's turn has come; it runs once a person approves.

    Sent when approval becomes possible (the stages before it are done), not when a
    WAITING stage is merely created behind unfinished ones.
    """
    body = {
        "entity": "STAGE",
        "jobId": str(job_id),
        "stageId": str(stage_id),
        "stageType": stage_type,
        "fromStatus": None,
        "toStatus": "WAITING",
        "time": now.isoformat(),
    }
    await publish_later(s, [(lifecycle_key("STAGE", "WAITING"), body)], now)
