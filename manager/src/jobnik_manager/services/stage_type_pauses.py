"""Pausing a stage type: none of its tasks is handed out, in any job, until it is resumed
(the claim statements skip a type that has a row in stage_type_pauses). Both calls are
idempotent: pausing a paused type keeps its first pause; resuming a running one does
nothing. Resuming wakes the type's workers, as tasks that became ready would."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in, principal_in
from ..db.models import StageTypePause
from ..domain.announcements import stage_type_resumed


@dataclass(frozen=True, slots=True)
class Paused:
    stage_type: str
    at: datetime
    by: str | None


async def pause(s: AsyncSession, stage_type: str) -> Paused:
    found = await s.get(StageTypePause, stage_type)
    if found is None:
        found = StageTypePause(type=stage_type, paused_at=now_in(s), principal=principal_in(s))
        s.add(found)
        await s.flush()
    return Paused(found.type, found.paused_at, found.principal)


async def resume(s: AsyncSession, stage_type: str) -> None:
    result = await s.execute(delete(StageTypePause).where(StageTypePause.type == stage_type))
    if getattr(result, "rowcount", 0):
        stage_type_resumed(s.info, stage_type, now_in(s))


async def paused_types(s: AsyncSession) -> dict[str, Paused]:
    rows = (await s.execute(select(StageTypePause))).scalars()
    return {r.type: Paused(r.type, r.paused_at, r.principal) for r in rows}
