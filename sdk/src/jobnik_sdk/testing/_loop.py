"""The event loop the in-process managers run on: one thread of its own per process.

A test's event loop comes and goes (one per test, or none in a synchronous test), and a
fake manager may outlive it or be built before it; a database's connections belong to
the loop that opened them. So every fake manager serves its requests on this loop, and
a client in any loop reaches it as over a network."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background() -> asyncio.AbstractEventLoop:
    """The process's manager loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            # A daemon: nothing it holds needs to outlive the program.
            threading.Thread(
                target=loop.run_forever, name="jobnik-fake-manager", daemon=True
            ).start()
            _loop = loop
        return _loop


def submit(work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `work` on the manager loop."""
    return asyncio.run_coroutine_threadsafe(work, background())


async def on_manager_loop(work: Coroutine[Any, Any, T]) -> T:
    """Await `work`, run on the manager loop, from any other loop; cancelling the
    caller cancels it there."""
    return await asyncio.wrap_future(submit(work))


def wait_on_manager_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on the manager loop and block this thread until it is done."""
    return submit(work).result()
