"""Running a create request once per Idempotency-Key."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Header, Request, Response
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database
from ..services.idempotency import StoredAnswer, fingerprint, recall, remember
from .presenters import json_response

IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e]+$",
        description="Repeat the request safely: the first answer is returned again.",
    ),
]


def _answer(made: object, status_code: int) -> StoredAnswer:
    """What a create made, answered with `status_code`, unless it answered otherwise (a
    StoredAnswer: an existing entity instead of a new one)."""
    return made if isinstance(made, StoredAnswer) else StoredAnswer(status_code, made)


async def create_once(
    db: Database,
    request: Request,
    key: str | None,
    payload: Callable[[], object],
    create: Callable[[AsyncSession], Awaitable[object]],
    status_code: int = 201,
) -> Response:
    """Run `create` in one transaction with the key's record, or answer the record.

    `create` returns the answer's JSON (what the route's response model would render:
    camelCase, no nulls), or a StoredAnswer with a status of its own. `payload` gives the
    request's JSON for the key's fingerprint; it is only worked out when a key was sent,
    since a large create pays for it."""
    if key is None:
        made = _answer(await db.transaction(create), status_code)
        return json_response(made.body, made.status_code)
    print_ = fingerprint(request.method, request.url.path, payload())

    async def work(s: AsyncSession) -> StoredAnswer:
        stored = await recall(s, key, print_)
        if stored is not None:
            return stored
        answer = _answer(await create(s), status_code)
        await remember(s, key, print_, answer)
        return answer

    try:
        stored = await db.transaction(work)
    except IntegrityError:
        # Another request with this key committed first; its answer is ours.
        stored = await db.transaction(work)
    return json_response(stored.body, stored.status_code)
