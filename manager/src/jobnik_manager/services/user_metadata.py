"""Replacing the user metadata of a job, a stage or a task: the same for all three."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from .loading import Row, load


async def replace_user_metadata(
    s: AsyncSession, model: type[Row], row_id: uuid.UUID, metadata: dict[str, Any]
) -> None:
    row = await load(s, model, row_id, lock=True)
    row.user_metadata = metadata
    row.update_time = now_in(s)
