"""Wake-ups over RabbitMQ: a message on `task.ready.<stageType>` means "claim now".

A message carries no task; the manager stays the only way to get one. The queue is
acked at once, so a delivery is never held for the length of a task, and lost or
duplicate messages cost at most one empty claim or one slow-poll interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from tenacity import RetryCallState

from ._backoff import Backoff
from ._clock import SYSTEM_CLOCK, Clock
from ._logs import Log
from ._retry import retrying

EXCHANGE = "jobnik"
# The wait before connecting again after a connection was lost, doubling per failure.
_FIRST_WAIT = timedelta(milliseconds=500)


class _Closed(Exception):
    """The broker closed a connection that was listening: connect again."""


def _failed(state: RetryCallState) -> bool:
    """Connect again after any error, never after a cancellation (which stops it)."""
    return state.outcome is not None and isinstance(state.outcome.exception(), Exception)


def queue_name(stage_type: str) -> str:
    """The durable queue the workers of one stage type share."""
    return f"jobnik.tasks.{stage_type}"


def ready_key(stage_type: str) -> str:
    return f"task.ready.{stage_type}"


class Wakeups:
    """Listens on the stage types' queues and sets `event` for every message.

    `run()` connects, declares the exchange and a durable queue per stage type bound to
    its ready key, and consumes until cancelled, reconnecting with backoff (up to
    `max_backoff`) whenever the broker goes away. `connected` tells whether it is
    listening now; while it is not, the worker relies on polling.
    """

    def __init__(
        self,
        amqp_url: str,
        stage_types: Sequence[str],
        *,
        max_backoff: timedelta = timedelta(seconds=30),
        logger: Log | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.amqp_url = amqp_url
        self.stage_types = list(stage_types)
        self.event = asyncio.Event()
        self.connected = False
        self.received = 0
        self._max_backoff = max_backoff
        self._clock = clock
        self._failures = 0
        self._log: Log = logger or logging.getLogger("jobnik_sdk.wakeup")

    async def run(self) -> None:
        """Listen until cancelled, connecting again whenever the connection is lost."""
        try:
            import aio_pika  # noqa: F401  (here, so a missing extra fails at once)
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError("amqp_url needs aio-pika: pip install 'jobnik-sdk[amqp]'") from exc
        # Waits of 0.5 s doubling up to `max_backoff`, counted from the last connection.
        backoff = Backoff(
            initial=min(_FIRST_WAIT, self._max_backoff),
            maximum=self._max_backoff,
            multiplier=2.0,
            jitter=0.0,
        )
        tries = retrying(
            backoff=backoff,
            should_retry=_failed,
            step=lambda state: self._failures,
            before_sleep=self._before_sleep,
            clock=self._clock,
        )
        await tries(self._listen)

    async def _listen(self) -> None:
        """One connection: listen until it closes (raising _Closed) or fails."""
        import aio_pika

        connection: Any = None
        try:
            connection = await aio_pika.connect(self.amqp_url, timeout=10)
            closed = asyncio.Event()
            connection.close_callbacks.add(lambda *_, done=closed: done.set())
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=50)
            exchange = await channel.declare_exchange(
                EXCHANGE, aio_pika.ExchangeType.TOPIC, durable=True
            )
            for stage_type in self.stage_types:
                queue = await channel.declare_queue(queue_name(stage_type), durable=True)
                await queue.bind(exchange, routing_key=ready_key(stage_type))
                await queue.consume(self._on_message)
            self.connected = True
            self._failures = 0
            self._log.info("listening for wake-ups on %s", self.stage_types)
            # Anything published while we were away is covered by one claim round.
            self.event.set()
            await closed.wait()
            self._log.warning("wake-up connection closed; polling until it is back")
            raise _Closed
        except BaseException:
            self._failures += 1
            raise
        finally:
            self.connected = False
            self.event.set()  # an idle worker goes back to polling at once
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close()

    def _before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(error, _Closed):
            self._log.warning(
                "wake-ups unavailable (%s); retrying in %.1f s", error, state.upcoming_sleep
            )

    async def _on_message(self, message: Any) -> None:
        # A hint only: the claim it calls for need not wait for the acknowledgement.
        self.received += 1
        self.event.set()
        await message.ack()
