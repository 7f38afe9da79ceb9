"""Forgetting idempotency keys once no client could still be retrying with them."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import IdempotencyKey

KEY_RETENTION = timedelta(hours=24)


async def forget_old_keys(s: AsyncSession) -> int:
    result = await s.execute(
        delete(IdempotencyKey).where(IdempotencyKey.created_at < now_in(s) - KEY_RETENTION)
    )
    return int(getattr(result, "rowcount", 0) or 0)
