"""Idempotency keys: the first answer to a create request, kept to be answered again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.deferred import defer
from ..db.engine import now_in
from ..db.models import IDEMPOTENCY_KEYS
from ..domain.errors import IdempotencyKeyReused


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    status_code: int
    body: Any


def fingerprint(method: str, path: str, body: Any) -> str:
    """The request's identity: same key, other fingerprint means the key was reused."""
    canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


async def recall(s: AsyncSession, key: str, print_: str) -> StoredAnswer | None:
    keys = IDEMPOTENCY_KEYS.c
    row = (
        await s.execute(
            select(keys.fingerprint, keys.status_code, keys.response).where(keys.key == key)
        )
    ).one_or_none()
    if row is None:
        return None
    if row.fingerprint != print_:
        raise IdempotencyKeyReused()
    return StoredAnswer(row.status_code, row.response)


async def remember(s: AsyncSession, key: str, print_: str, answer: StoredAnswer) -> None:
    # A concurrent first use of the key fails as this commits (an IntegrityError).
    defer(
        s,
        IDEMPOTENCY_KEYS,
        [
            {
                "key": key,
                "fingerprint": print_,
                "status_code": answer.status_code,
                "response": answer.body,
                "created_at": now_in(s),
            }
        ],
    )
