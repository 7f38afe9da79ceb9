"""Idempotency keys: the first answer to a create request, kept to be answered again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import orjson
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


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A request's identity: same key, other fingerprint means the key was reused."""

    value: str  # what a first use stores
    request: tuple[str, str, Any]

    def matches(self, stored: str) -> bool:
        # Keys stored by an earlier version carry the standard library's JSON text, whose
        # floats and non-ASCII text orjson writes otherwise: a retry across an upgrade
        # is still the same request.
        return stored == self.value or stored == _digest(_standard_text(self.request))


def fingerprint(method: str, path: str, body: Any) -> Fingerprint:
    """The request's fingerprint: its canonical JSON (keys sorted), hashed. orjson
    writes it several times faster than the standard library (a create may carry
    100,000 tasks); what orjson refuses (integers beyond 64 bits) takes the standard
    library's text."""
    request = (method, path, body)
    try:
        text = orjson.dumps(request, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        text = _standard_text(request)
    return Fingerprint(_digest(text), request)


def _standard_text(request: tuple[str, str, Any]) -> bytes:
    return json.dumps(list(request), sort_keys=True, separators=(",", ":")).encode()


def _digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


async def recall(s: AsyncSession, key: str, print_: Fingerprint) -> StoredAnswer | None:
    keys = IDEMPOTENCY_KEYS.c
    row = (
        await s.execute(
            select(keys.fingerprint, keys.status_code, keys.response).where(keys.key == key)
        )
    ).one_or_none()
    if row is None:
        return None
    if not print_.matches(row.fingerprint):
        raise IdempotencyKeyReused()
    return StoredAnswer(row.status_code, row.response)


async def remember(s: AsyncSession, key: str, print_: Fingerprint, answer: StoredAnswer) -> None:
    # A concurrent first use of the key fails as this commits (an IntegrityError).
    defer(
        s,
        IDEMPOTENCY_KEYS,
        [
            {
                "key": key,
                "fingerprint": print_.value,
                "status_code": answer.status_code,
                "response": answer.body,
                "created_at": now_in(s),
            }
        ],
    )
