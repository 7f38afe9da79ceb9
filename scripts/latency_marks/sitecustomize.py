"""Marks for `scripts/latency_timeline.py`: loaded by every Python process started with
this folder on PYTHONPATH and MARKS_OUT set, it wraps a few functions of the manager and
of the SDK's Worker so that each call writes `<monotonic ns> <label>>` as it starts and
`<label><` as it ends, to `MARKS_OUT.<pid>`. The clock is the system's monotonic one,
the same in every process, so the manager's and the Worker's marks line up.

A profiling aid, not part of the product: it names private functions, and a name that
moved is reported on stderr and skipped.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
from typing import Any

OUT = os.environ.get("MARKS_OUT")

MANAGER = (
    ("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol.data_received", "recv"),
    ("jobnik_manager.api.fast_lane", "FastLane.http", "lane"),
    ("jobnik_manager.api.idempotency", "create_once", "create"),
    ("jobnik_manager.services.idempotency", "recall", "key_select"),
    ("jobnik_manager.db.bulk", "insert_together", "rows_statement"),
    ("jobnik_manager.db.engine", "Database.committed", "committed"),
    ("jobnik_manager.api.routes.tasks", "_woken_or_gone", "woken"),
    ("jobnik_manager.services.claims", "_claim_postgres", "claim"),
    ("jobnik_manager.db.engine", "Database.direct", "statement"),
    ("jobnik_manager.dispatch.relay", "_publish", "publish"),
    ("jobnik_manager.http_protocol", "_JoinedWrites._flush", "socket_write"),
)
SDK = (
    ("jobnik_sdk._wakeup", "Wakeups._on_message", "W.wakeup"),
    ("jobnik_sdk._transport", "PlainHttpTransport.send", "W.http"),
    ("jobnik_sdk._claims", "Claimer._ask", "W.claim"),
    ("jobnik_sdk._worker", "Worker._take_claimed", "W.take"),
    ("jobnik_sdk._attempt", "Attempt.run", "W.handler"),
)

_marks: list[tuple[int, str]] = []


def mark(label: str) -> None:
    _marks.append((time.monotonic_ns(), label))


def flush() -> None:
    global _marks
    taken, _marks = _marks, []
    if taken and OUT:
        with open(f"{OUT}.{os.getpid()}", "a", encoding="utf-8") as out:
            out.writelines(f"{t} {label}\n" for t, label in taken)


def _wrapped(fn: Any, label: str) -> Any:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            mark(label + ">")
            try:
                return await fn(*args, **kwargs)
            finally:
                mark(label + "<")

        return timed_async

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        mark(label + ">")
        try:
            return fn(*args, **kwargs)
        finally:
            mark(label + "<")

    return timed


def _replace(original: Any, new: Any) -> None:
    """Put `new` wherever a module or one of its classes holds `original`: names
    imported with `from ... import` are bound in the importing module."""
    owner_name = original.__qualname__.rpartition(".")[0]
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if not names:
            continue
        for key, value in list(names.items()):
            if value is original:
                names[key] = new
            elif (
                isinstance(value, type)
                and value.__name__ == owner_name
                and value.__dict__.get(original.__name__) is original
            ):
                setattr(value, original.__name__, new)


def install(table: tuple[tuple[str, str, str], ...]) -> None:
    for module_name, qualname, label in table:
        try:
            target: Any = sys.modules[module_name]
            for part in qualname.split("."):
                target = getattr(target, part)
            _replace(target, _wrapped(target, label))
        except (KeyError, AttributeError) as exc:
            sys.stderr.write(f"marks: {module_name}.{qualname} not found ({exc!r})\n")


def _watch() -> None:
    """Install once the process has imported what it runs (the manager's app, or the
    Worker), then flush every second."""
    for _ in range(600):
        if "jobnik_manager.api.fast_lane" in sys.modules:
            time.sleep(1.0)  # the app's imports done
            install(MANAGER)
            break
        if "jobnik_sdk._worker" in sys.modules and "--produce" not in sys.argv:
            install(SDK)
            break
        time.sleep(0.05)
    while True:
        time.sleep(1.0)
        flush()


if OUT:
    import atexit

    atexit.register(flush)
    threading.Thread(target=_watch, daemon=True, name="marks").start()
