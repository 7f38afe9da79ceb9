"""SIGTERM and SIGINT for every Worker of the process: one loop handler per signal,
calling each listener in turn.

An event loop keeps one handler per signal, so Workers that each installed their own
left all but the last one deaf; and the first to stop, on removing its handler, left the
others none at all (the loop then also stops listening for signals). Here the handlers
are installed by the first listener and the previous ones put back after the last.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

Listener = Callable[[signal.Signals], None]


class _Fanout:
    """The listeners of one event loop, and the handlers its own replaced."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.listeners: list[Listener] = []
        self.previous: dict[signal.Signals, Any] = {}
        for sig in STOP_SIGNALS:
            handler = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self.dispatch, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                continue  # e.g. Windows event loops have no signal handlers
            self.previous[sig] = handler

    def dispatch(self, sig: signal.Signals) -> None:
        # A copy: a listener may stop listening when called.
        for listener in list(self.listeners):
            try:
                listener(sig)
            except Exception as exc:
                # Reported as the loop reports a failing callback; the listeners after
                # it still hear the signal.
                self.loop.call_exception_handler(
                    {"message": f"{sig.name} listener failed", "exception": exc}
                )

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            self.loop.remove_signal_handler(sig)
            # Give SIGINT back to asyncio.run's handler (or whoever had it), not to the
            # default that remove_signal_handler leaves.
            if handler is not None:
                signal.signal(sig, handler)


# At most one entry in practice (only the main thread's loop gets one), weak so that a
# loop closed with listeners still registered does not linger.
_fanouts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Fanout] = (
    weakref.WeakKeyDictionary()
)


def listen_for_stop(listener: Listener) -> Callable[[], None]:
    """Call `listener` with each SIGTERM or SIGINT the running loop receives; the
    function returned stops it (idempotent). Outside the main thread, where a loop
    cannot handle signals, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    fanout = _fanouts.get(loop)
    if fanout is None:
        fanout = _fanouts[loop] = _Fanout(loop)
    fanout.listeners.append(listener)
    listening = True

    def stop_listening() -> None:
        nonlocal listening
        if not listening:
            return
        listening = False
        fanout.listeners.remove(listener)
        if not fanout.listeners and _fanouts.get(loop) is fanout:
            del _fanouts[loop]
            fanout.restore()

    return stop_listening
