"""Token management over the API, for admin tokens (JOBNIK_AUTH=on); the same as
`jobnik-manager tokens`. With authentication off these answer 403: tokens made while
anyone may call would hold once it is turned on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Path, Request
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import ApiToken
from ...domain.auth import Role
from ...domain.errors import DomainError
from ...services import tokens
from ..deps import DatabaseDep
from ..edge import EdgeRoute
from ..same_named import same_named
from ..schemas import ErrorMessage, TokenCreate, TokenOut
from ..transaction import in_transaction
from .common import answers

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], route_class=EdgeRoute)
ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorMessage},
    403: {"model": ErrorMessage, "description": "FORBIDDEN: auth off, or not an admin token"},
    404: {"model": ErrorMessage},
    409: {"model": ErrorMessage, "description": "TOKEN_NAME_TAKEN"},
}
TokenName = Annotated[str, Path(min_length=1, max_length=100)]


class AuthOff(DomainError):
    code = "FORBIDDEN"
    http_status = 403
    default_message = "tokens are managed over the API only with JOBNIK_AUTH=on"


def _auth_on(request: Request) -> None:
    if request.app.state.settings.auth != "on":
        raise AuthOff()


def _out(row: ApiToken, token: str | None = None) -> TokenOut:
    return TokenOut(**same_named(row, TokenOut, token=token))


@router.post("", **answers(TokenOut, ERRORS, status_code=201))
async def create_token(db: DatabaseDep, request: Request, payload: TokenCreate) -> TokenOut:
    """Make a token; the answer holds its text, the only time it is shown."""
    _auth_on(request)

    async def work(s: AsyncSession) -> TokenOut:
        made = await tokens.create(s, payload.name, Role(payload.role), payload.stage_types or ())
        return _out(made.row, made.token)

    return await in_transaction(db, work)


@router.get("", **answers(list[TokenOut], ERRORS))
async def list_tokens(db: DatabaseDep, request: Request) -> Sequence[TokenOut]:
    _auth_on(request)

    async def work(s: AsyncSession) -> list[TokenOut]:
        return [_out(row) for row in await tokens.listed(s)]

    return await in_transaction(db, work)


@router.delete("/{name}", **answers(TokenOut, ERRORS))
async def revoke_token(db: DatabaseDep, request: Request, name: TokenName) -> TokenOut:
    """Revoke a token: it stops working at once, on every replica."""
    _auth_on(request)

    async def work(s: AsyncSession) -> TokenOut:
        await tokens.revoke(s, name)
        [row] = [r for r in await tokens.listed(s) if r.name == name]
        return _out(row)

    return await in_transaction(db, work)
