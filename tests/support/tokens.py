"""An auth-on app on a test's database, with a client for each of several tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx

from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role
from jobnik_manager.services import tokens
from jobnik_manager.settings import Settings

from .api import Api
from .apps import app_on


@asynccontextmanager
async def clients_as(db: Database, roles: dict[str, Role]) -> AsyncIterator[dict[str, Api]]:
    """A client for each token `roles` names (made with its role), on one auth-on app."""
    made = {}
    for name, role in roles.items():
        made[name] = (await db.transaction(lambda s, n=name, r=role: tokens.create(s, n, r))).token
    with app_on(db, Settings(database_url=db.url, auth="on")) as app:
        transport = httpx.ASGITransport(app=app)
        async with AsyncExitStack() as stack:
            apis = {}
            for name, token in made.items():
                http = await stack.enter_async_context(
                    httpx.AsyncClient(transport=transport, base_url="http://m")
                )
                http.headers["authorization"] = f"Bearer {token}"
                apis[name] = Api(http)
            yield apis
