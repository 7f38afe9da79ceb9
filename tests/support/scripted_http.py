"""A scripted HTTP/1.1 server on a real socket: each request it reads (head and body) is
kept, and a function of the test's answers it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from .processes import free_port

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Server:
    base: str
    connections: int = 0
    requests: list[tuple[bytes, bytes]] = field(default_factory=list)  # head, body


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, await reader.readexactly(length)


def answer(body: bytes, *, status: str = "200 OK", close: bool = False) -> bytes:
    extra = b"Connection: close\r\n" if close else b""
    return b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        status.encode(),
        len(body),
        extra,
        body,
    )


@asynccontextmanager
async def scripted(
    respond: Callable[[Server, bytes, bytes, asyncio.StreamWriter], Awaitable[bool]],
) -> AsyncIterator[Server]:
    """A server whose `respond` answers each request; it returns False to close."""
    port = free_port()
    server = Server(f"http://127.0.0.1:{port}")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        try:
            while (request := await read_request(reader)) is not None:
                server.requests.append(request)
                if not await respond(server, *request, writer):
                    break
                await writer.drain()
        finally:
            writer.close()

    listening = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        yield server
    finally:
        listening.close()
