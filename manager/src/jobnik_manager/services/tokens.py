"""API tokens: made, listed and revoked by `jobnik-manager tokens`, looked up on each
request (no cache: a revoked token stops working at once on every replica)."""

from __future__ import annotations

import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import ApiToken
from ..domain.auth import Principal, Role, new_token, token_hash
from ..domain.errors import DomainError, NotFound, RuleViolation, TokenNameTaken

TokenError = DomainError  # what the command line reports in words


@dataclass(frozen=True, slots=True)
class Made:
    token: str  # shown once, never stored
    row: ApiToken


async def create(s: AsyncSession, name: str, role: Role, stage_types: Sequence[str] = ()) -> Made:
    if not name or len(name) > 100:
        raise RuleViolation("a token's name takes 1 to 100 characters", code="VALIDATION_ERROR")
    if stage_types and role is not Role.WORKER:
        raise RuleViolation(
            "only a worker token is limited to stage types", code="VALIDATION_ERROR"
        )
    taken = await s.scalar(select(ApiToken.id).where(ApiToken.name == name))
    if taken is not None:
        raise TokenNameTaken(f"a token named {name!r} exists already")
    token = new_token()
    row = ApiToken(
        id=uuid.uuid4(),
        name=name,
        role=role.value,
        stage_types=sorted(set(stage_types)) or None,
        token_hash=token_hash(token),
        created_at=now_in(s),
        revoked_at=None,
    )
    s.add(row)
    await s.flush()
    return Made(token, row)


async def listed(s: AsyncSession) -> list[ApiToken]:
    return list((await s.scalars(select(ApiToken).order_by(ApiToken.created_at))).all())


async def revoke(s: AsyncSession, name: str) -> None:
    done = await s.execute(
        update(ApiToken)
        .where(ApiToken.name == name, ApiToken.revoked_at.is_(None))
        .values(revoked_at=now_in(s))
    )
    if not done.rowcount:  # type: ignore[attr-defined]
        raise NotFound(f"no live token named {name!r}", code="TOKEN_NOT_FOUND")


async def principal_of(s: AsyncSession, token: str) -> Principal | None:
    """The live token's principal, or None."""
    digest = token_hash(token)
    row = (
        await s.execute(
            select(ApiToken.name, ApiToken.role, ApiToken.stage_types, ApiToken.token_hash).where(
                ApiToken.token_hash == digest, ApiToken.revoked_at.is_(None)
            )
        )
    ).first()
    # The lookup went by hash; compared again in constant time all the same.
    if row is None or not hmac.compare_digest(row.token_hash, digest):
        return None
    return Principal(row.name, Role(row.role), frozenset(row.stage_types or ()))
