"""Stage summaries moved by batches of task changes: one UPDATE per stage, in stage id
order (so two batches never wait on each other in a cycle), the counts incremented in
SQL so that concurrent batches serialise on the row without losing any."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import STAGES
from ..domain.statuses import StageStatus, TaskStatus
from ..domain.summary import COUNTERS, Summary, percentage, summary_field

_STAGES = STAGES


@dataclass(frozen=True, slots=True)
class StageCounts:
    """A stage as a batch left it."""

    id: uuid.UUID
    job_id: uuid.UUID
    status: StageStatus
    summary: Summary
    allowed_failures: int


def moves(pairs: list[tuple[uuid.UUID, TaskStatus, TaskStatus]]) -> dict[uuid.UUID, Counter[str]]:
    """Per stage, the count deltas of tasks moved from one status to another."""
    deltas: dict[uuid.UUID, Counter[str]] = {}
    for stage_id, source, target in pairs:
        delta = deltas.setdefault(stage_id, Counter())
        delta[summary_field(source)] -= 1
        delta[summary_field(target)] += 1
    return deltas


async def bump(
    s: AsyncSession, deltas: Mapping[uuid.UUID, Counter[str]], now: datetime
) -> list[StageCounts]:
    """Apply count deltas to these stages' summaries; returns each stage's new counts."""
    out: list[StageCounts] = []
    for stage_id in sorted(deltas):
        values: dict[str, object] = {"update_time": now}
        for field, n in deltas[stage_id].items():
            if n:
                values[field] = _STAGES.c[field] + n
        row = (
            await s.execute(
                update(_STAGES)
                .where(_STAGES.c.id == stage_id)
                .values(**values)
                .returning(
                    _STAGES.c.job_id,
                    _STAGES.c.status,
                    _STAGES.c.percentage,
                    _STAGES.c.allowed_failures,
                    *(_STAGES.c[c] for c in COUNTERS),
                )
            )
        ).one()
        summary = Summary.of_columns(row)
        share = percentage(summary.completed, summary.total)
        if share != row.percentage:
            await s.execute(
                update(_STAGES).where(_STAGES.c.id == stage_id).values(percentage=share)
            )
        out.append(StageCounts(stage_id, row.job_id, row.status, summary, row.allowed_failures))
    return out
