"""The outbox: the messages a transaction announces, written as rows in that transaction.

Only with a broker: an `Outbox` hooked onto the database (`Database.with_hooks`) makes
every transaction record its lifecycle messages (`domain.announcements`) and writes them
at its commit with the other deferred rows, in the order they were announced; after the
commit it wakes the relay. Without one the manager records and writes none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ..db.deferred import defer
from ..db.models import OUTBOX
from ..domain.announcements import ANNOUNCED, ANNOUNCING, MESSAGES, Message


class Outbox:
    """The transaction hook of the outbox, and the event its relay waits on."""

    info: Mapping[str, Any] = {ANNOUNCING: True}

    def __init__(self) -> None:
        # Set after a commit that wrote rows: the relay publishes them at once.
        self.written = asyncio.Event()

    async def before_commit(self, s: AsyncSession) -> None:
        messages: list[Message] | None = s.info.get(MESSAGES)
        if messages:
            defer(
                s,
                OUTBOX,
                [
                    {"routing_key": key, "payload": body, "created_at": at}
                    for key, body, at in messages
                ],
            )
            s.info[ANNOUNCED] = True

    def after_commit(self, info: Mapping[str, Any]) -> None:
        if info.get(ANNOUNCED):
            self.written.set()
