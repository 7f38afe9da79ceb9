"""Running a create request once per Idempotency-Key."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database
from ..services.idempotency import StoredAnswer, fingerprint, recall, remember

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


Answer = BaseModel | list[BaseModel]


def _body(answer: Answer) -> object:
    """The JSON the route's response model would render (camelCase, no nulls)."""
    if isinstance(answer, list):
        return [_body(item) for item in answer]
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True)


async def create_once(
    db: Database,
    request: Request,
    key: str | None,
    payload: object,
    create: Callable[[AsyncSession], Awaitable[Answer]],
    status_code: int = 201,
) -> JSONResponse:
    """Run `create` in one transaction with the key's record, or answer the record."""
    if key is None:
        answer = await db.transaction(create)
        return JSONResponse(_body(answer), status_code=status_code)
    print_ = fingerprint(request.method, request.url.path, payload)

    async def work(s: AsyncSession) -> StoredAnswer:
        stored = await recall(s, key, print_)
        if stored is not None:
            return stored
        answer = StoredAnswer(status_code, _body(await create(s)))
        await remember(s, key, print_, answer)
        return answer

    try:
        stored = await db.transaction(work)
    except IntegrityError:
        # Another request with this key committed first; its answer is ours.
        stored = await db.transaction(work)
    return JSONResponse(stored.body, status_code=stored.status_code)
