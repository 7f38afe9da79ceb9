"""The wake-up listener connects again after a broker it cannot reach, on the retry
helper's backoff and the worker's clock (so this test never sleeps)."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta

import pytest

from jobnik_sdk._wakeup import Wakeups


class RecordingClock:
    """A clock whose sleeps return at once, each recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self.enough = asyncio.Event()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if len(self.slept) >= 6:
            self.enough.set()
        await asyncio.sleep(0)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there once the probe is closed


async def test_an_unreachable_broker_is_tried_again_with_doubling_waits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pytest.importorskip("aio_pika")
    clock = RecordingClock()
    wakeups = Wakeups(
        f"amqp://guest:guest@127.0.0.1:{closed_port()}/",
        ["tiles"],
        max_backoff=timedelta(seconds=4),
        clock=clock,
    )
    listening = asyncio.create_task(wakeups.run())
    try:
        await asyncio.wait_for(clock.enough.wait(), 30)
    finally:
        listening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listening
    assert clock.slept[:6] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert not wakeups.connected
    assert wakeups.event.is_set()  # an idle worker polls meanwhile
    assert "wake-ups unavailable" in caplog.text
