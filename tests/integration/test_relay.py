"""The relay against a real RabbitMQ: lifecycle events reach a bound consumer, and the
outbox drains to empty."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import OutboxMessage
from jobnik_manager.dispatch.outbox import Outbox
from jobnik_manager.dispatch.relay import EXCHANGE, Relay, declare_exchange

from ..conftest import app_client
from ..support.api import Api, unique


@pytest.fixture
def outbox() -> Outbox:
    return Outbox()


@pytest.fixture
async def relay(pg_db: Database, amqp_url: str, outbox: Outbox) -> AsyncIterator[Relay]:
    relay = Relay(pg_db, amqp_url, outbox=outbox)
    running = asyncio.create_task(relay.run())
    yield relay
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running


async def outbox_size(db: Database) -> int:
    async with db.sessions() as s:
        return int((await s.execute(select(func.count()).select_from(OutboxMessage))).scalar_one())


async def test_a_consumer_hears_stage_waiting_once_and_job_completed(
    relay: Relay, outbox: Outbox, pg_db: Database, amqp_url: str
) -> None:
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        exchange = await declare_exchange(channel)
        assert exchange.name == EXCHANGE
        queue = await channel.declare_queue(exclusive=True)
        for key in ("stage.waiting", "job.completed"):
            await queue.bind(exchange, routing_key=key)
        heard: list[tuple[str, dict[str, Any]]] = []
        mine: dict[str, Any] = {}

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            async with message.process():
                body = json.loads(message.body)
                # The broker is shared: keep only this test's job.
                if body.get("jobId") == mine.get("id"):
                    heard.append((message.routing_key or "", body))

        await queue.consume(on_message)

        async with app_client(pg_db.with_hooks(outbox)) as c:
            api = Api(c)
            first, second = unique("first"), unique("approve")
            job = await api.create_job()
            mine.update(job)
            s1 = await api.create_stage(job["id"], first)
            s2 = await api.create_stage(job["id"], second, waiting=True)
            await api.create_tasks(s1["id"])
            await api.create_tasks(s2["id"])
            await api.run_one(first)
            await _until(lambda: len(heard) >= 1)
            await api.approve(s2["id"])
            await api.run_one(second)
            await _until(lambda: len(heard) >= 2)
            await asyncio.sleep(0.5)  # anything more would arrive now

    assert [key for key, _ in heard] == ["stage.waiting", "job.completed"]
    waiting, completed = heard[0][1], heard[1][1]
    assert (waiting["jobId"], waiting["stageId"], waiting["stageType"]) == (
        job["id"],
        s2["id"],
        second,
    )
    assert completed["jobId"] == job["id"] and completed["toStatus"] == "COMPLETED"
    await _until_async(lambda: outbox_size(pg_db), 0)
    assert relay.published >= 10


async def test_wake_ups_go_transient_and_lifecycle_messages_persistent(
    relay: Relay, outbox: Outbox, pg_db: Database, amqp_url: str
) -> None:
    """A wake-up is a hint the broker need not keep on disk before it hands it out (a
    lost one costs a claim round); a lifecycle message is kept."""
    stage_type = unique("ready")
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        exchange = await declare_exchange(channel)
        queue = await channel.declare_queue(exclusive=True)
        await queue.bind(exchange, routing_key=f"task.ready.{stage_type}")
        await queue.bind(exchange, routing_key="job.completed")
        heard: dict[str, aio_pika.DeliveryMode] = {}
        mine: dict[str, Any] = {}

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            async with message.process():
                body = json.loads(message.body)
                key = message.routing_key or ""
                if key.startswith("task.ready.") or body.get("jobId") == mine.get("id"):
                    heard[key] = aio_pika.DeliveryMode(message.delivery_mode)

        await queue.consume(on_message)
        async with app_client(pg_db.with_hooks(outbox)) as c:
            api = Api(c)
            job = await api.create_job()
            mine.update(job)
            stage = await api.create_stage(job["id"], stage_type)
            await api.create_tasks(stage["id"])
            await api.run_one(stage_type)
            await _until(lambda: len(heard) >= 2)
    assert heard == {
        f"task.ready.{stage_type}": aio_pika.DeliveryMode.NOT_PERSISTENT,
        "job.completed": aio_pika.DeliveryMode.PERSISTENT,
    }


async def _until(check: Any) -> None:
    for _ in range(200):  # 10 s
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


async def _until_async(probe: Any, expected: int) -> None:
    for _ in range(200):
        if (value := await probe()) == expected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"still {value}")
