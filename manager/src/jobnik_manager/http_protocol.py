"""The HTTP server's protocol: uvicorn's httptools protocol, each answer sent in one write.

uvicorn writes an answer's status line and headers as the app starts it, and its body
as a second write: two system calls and, the socket being TCP_NODELAY, two packets,
each waking the client. Profiled under a v1 worker's load, the writes took a sixth of
the manager's time on a virtual machine, where a system call is dear. Here a write is
held until the next one or until the event loop's turn ends, whichever comes first, and
joined with it: an answer the app sends in one turn (all of the manager's) leaves in one
write, and nothing waits longer than that turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _JoinedWrites:
    """A transport whose writes within one turn of the loop reach the socket as one."""

    __slots__ = ("_held", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytearray | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is None:
            self._held = bytearray(data)
            asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._held += data

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class JoinedWritesProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over `_JoinedWrites` (passed as uvicorn's `http`)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_JoinedWrites(transport))  # type: ignore[arg-type]
