"""The manager's HTTP protocol (jobnik_manager/http_protocol.py): uvicorn serving over a
real socket, each answer's head and body leaving in one write, answers of every shape
(fixed length, streamed, to a HEAD, closing the connection) whole and in order."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from jobnik_manager.http_protocol import JoinedWritesProtocol

pytestmark = pytest.mark.integration

WRITES: list[bytes] = []


class _Counted(JoinedWritesProtocol):
    """The protocol, with every write that reaches the socket's transport recorded."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        write = transport.write

        def recorded(data: Any) -> None:
            WRITES.append(bytes(data))
            write(data)

        transport.write = recorded  # type: ignore[method-assign]
        super().connection_made(transport)


async def _text(request: Request) -> Response:
    return PlainTextResponse("x" * int(request.query_params.get("n", "10")))


async def _stream(_request: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
        for i in range(3):
            await asyncio.sleep(0.01)  # each part in a later turn of the loop
            yield f"part{i};".encode()

    return StreamingResponse(parts())


APP = Starlette(routes=[Route("/text", _text, methods=["GET", "HEAD"]), Route("/stream", _stream)])


@contextlib.asynccontextmanager
async def served() -> AsyncIterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(APP, port=port, http=_Counted, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):  # up to 5 s
        if server.started:
            break
        await asyncio.sleep(0.01)
    assert server.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def test_an_answer_leaves_in_one_write_and_every_shape_arrives_whole() -> None:
    WRITES.clear()
    async with served() as url, httpx.AsyncClient(base_url=url) as client:
        for n in (0, 10, 100_000):
            answer = await client.get("/text", params={"n": n})
            assert answer.status_code == 200 and answer.text == "x" * n
        head = await client.head("/text")
        assert head.status_code == 200 and head.headers["content-length"] == "10"
        streamed = await client.get("/stream")
        assert streamed.text == "part0;part1;part2;"
        closing = await client.get("/text", headers={"connection": "close"})
        assert closing.text == "x" * 10
        again = await client.get("/text", params={"n": 3})  # on a new connection
        assert again.text == "xxx"
    fixed = [w for w in WRITES if b"content-length" in w.lower()]
    # Six answers of known length (three sizes, the HEAD, the closing one, the last):
    # each is one write, its head and body together.
    assert len(fixed) == 6
    bodies = []
    for write in fixed:
        head, _, body = write.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        bodies.append((length, len(body)))
    assert bodies == [(0, 0), (10, 10), (100_000, 100_000), (10, 0), (10, 10), (3, 3)]
    streamed = [w for w in WRITES if b"part" in w or b"chunked" in w.lower()]
    # The streamed answer, its parts each a turn of the loop apart: the head alone, a
    # write a part, the last with the closing chunk.
    assert [b"chunked" in w.lower() for w in streamed] == [True, False, False, False]
    assert streamed[1:] == [b"6\r\npart0;\r\n", b"6\r\npart1;\r\n", b"6\r\npart2;\r\n0\r\n\r\n"]
