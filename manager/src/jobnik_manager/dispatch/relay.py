"""The relay: publishes outbox rows to the `jobnik` topic exchange, oldest first.

Rows are taken with SKIP LOCKED, so every replica can run a relay; a row is deleted
in the same transaction that published it, after the broker's confirm. A crash
between confirm and commit publishes the row again: delivery is at least once, and
consumers treat messages as hints (a wake-up, an event to look up).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import aio_pika
from aio_pika.abc import AbstractConnection, AbstractExchange
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database
from ..db.models import OutboxMessage
from ..domain.announcements import is_wakeup
from ..observe.metrics import RELAY_LAG, RELAY_PUBLISHED
from .outbox import Outbox

log = logging.getLogger(__name__)

EXCHANGE = "jobnik"
BATCH = 200
CONFIRM_TIMEOUT = 15.0  # seconds; past it the rows stay for the next attempt


async def declare_exchange(channel: aio_pika.abc.AbstractChannel) -> AbstractExchange:
    return await channel.declare_exchange(EXCHANGE, aio_pika.ExchangeType.TOPIC, durable=True)


async def publish_batch(db: Database, exchange: AbstractExchange) -> int:
    """Publish and delete up to BATCH rows in one transaction; returns how many."""
    if db.is_sqlite:
        return await db.transaction(lambda s: _publish_in_session(s, exchange))
    # PostgreSQL: plain statements on the driver, as this sits between a commit and the
    # wake-up of the workers it concerns.
    async with db.direct_transaction() as conn:
        rows = [
            Outgoing(r["seq"], r["routing_key"], r["payload"].encode(), r["created_at"])
            for r in await conn.fetch(_TAKE, BATCH)
        ]
        if rows:
            await _publish(exchange, rows)
            await conn.execute(_DELETE, [row.seq for row in rows])
        return len(rows)


# The payload as stored (JSON text), published as it is.
_TAKE = (
    "SELECT seq, routing_key, payload::text AS payload, created_at FROM outbox"
    " ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED"
)
_DELETE = "DELETE FROM outbox WHERE seq = ANY($1::bigint[])"


@dataclass(frozen=True, slots=True)
class Outgoing:
    seq: int
    routing_key: str
    body: bytes
    created_at: datetime


async def _publish_in_session(s: AsyncSession, exchange: AbstractExchange) -> int:
    taken = (
        await s.execute(select(OutboxMessage).order_by(OutboxMessage.seq).limit(BATCH))
    ).scalars()
    rows = [
        Outgoing(r.seq, r.routing_key, json.dumps(r.payload).encode(), r.created_at) for r in taken
    ]
    if rows:
        await _publish(exchange, rows)
        await s.execute(
            delete(OutboxMessage).where(OutboxMessage.seq.in_([row.seq for row in rows]))
        )
    return len(rows)


def _delivery_mode(routing_key: str) -> aio_pika.DeliveryMode:
    # A wake-up is a hint, and late it is worth little: the broker hands a persistent
    # message to its durable queue's consumer only once it is on disk (about 3 ms
    # here), so wake-ups go transient. Lifecycle messages stay persistent.
    if is_wakeup(routing_key):
        return aio_pika.DeliveryMode.NOT_PERSISTENT
    return aio_pika.DeliveryMode.PERSISTENT


async def _publish(exchange: AbstractExchange, rows: list[Outgoing]) -> None:
    # With publisher confirms each publish returns once the broker has the message;
    # a nack or a lost connection raises, and the rollback keeps the rows.
    publishes = asyncio.gather(
        *(
            exchange.publish(
                aio_pika.Message(
                    row.body,
                    content_type="application/json",
                    delivery_mode=_delivery_mode(row.routing_key),
                    message_id=str(row.seq),
                    timestamp=row.created_at,
                ),
                routing_key=row.routing_key,
                mandatory=False,
            )
            for row in rows
        )
    )
    await asyncio.wait_for(publishes, CONFIRM_TIMEOUT)
    now = datetime.now(UTC)
    for row in rows:
        RELAY_LAG.observe(max((now - row.created_at).total_seconds(), 0.0))
    RELAY_PUBLISHED.inc(len(rows))


class Relay:
    """Runs until cancelled: connect, drain the outbox, wait for news, repeat.

    Woken at once by the commits of this process that wrote rows (through `outbox`, the
    hook on its database); rows written by other replicas are picked up within `poll`.
    Connection failures back off up to `max_backoff`.
    """

    def __init__(
        self,
        db: Database,
        amqp_url: str,
        *,
        outbox: Outbox | None = None,
        poll: timedelta = timedelta(seconds=1),
        max_backoff: timedelta = timedelta(seconds=30),
    ) -> None:
        self.db = db
        self.amqp_url = amqp_url
        self.written = outbox.written if outbox is not None else asyncio.Event()
        self.poll = poll
        self.max_backoff = max_backoff
        self.published = 0

    async def run(self) -> None:
        backoff = 0.5
        while True:
            connection: AbstractConnection | None = None
            try:
                connection = await aio_pika.connect(self.amqp_url, timeout=10)
                channel = await connection.channel(publisher_confirms=True)
                exchange = await declare_exchange(channel)
                log.info("relay connected to %s", _safe(self.amqp_url))
                backoff = 0.5
                await self._drain_forever(exchange)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("relay: %s; reconnecting in %.1f s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff.total_seconds())
            finally:
                if connection is not None:
                    with contextlib.suppress(Exception):
                        await connection.close()

    async def _drain_forever(self, exchange: AbstractExchange) -> None:
        while True:
            self.written.clear()
            # A short batch took all there was: what commits later sets the event again.
            while (n := await publish_batch(self.db, exchange)) > 0:
                self.published += n
                if n < BATCH:
                    break
            # Not `wait_for`, whose task of its own would wake this one a turn or two
            # after the commit's: the request that committed yields one turn, in which
            # the relay sends its first statement ahead of that request's answer.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll.total_seconds()):
                    await self.written.wait()


def _safe(url: str) -> str:
    """The URL without its password, for logs."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1) if "://" in url else ("", url)
    return f"{scheme}://…@{rest.rsplit('@', 1)[1]}"
