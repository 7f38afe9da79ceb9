"""The SDK's own HTTP/1.1 transport (jobnik_sdk/_transport.py), against scripted servers
on real sockets: connections kept and reused, answers parsed (chunked ones too), and
each failure raised as the httpx error the SDK's retry policy tells apart."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from jobnik_sdk import JobnikClient
from jobnik_sdk._http import DEFAULT_LIMITS
from jobnik_sdk._transport import PlainHttpTransport

from ..support.processes import free_port
from ..support.scripted_http import Server, answer, scripted


def client(limits: httpx.Limits = DEFAULT_LIMITS, **timeouts: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=PlainHttpTransport(limits), timeout=httpx.Timeout(5.0, **timeouts)
    )


async def echo(server: Server, head: bytes, body: bytes, writer: asyncio.StreamWriter) -> bool:
    writer.write(answer(json.dumps({"n": len(server.requests), "got": body.decode()}).encode()))
    return True


async def test_calls_share_one_kept_connection_and_carry_their_bodies() -> None:
    async with scripted(echo) as server, client() as http:
        answers = [await http.post(f"{server.base}/x", json={"i": i}) for i in range(3)]
    assert [a.json() for a in answers] == [
        {"n": i + 1, "got": json.dumps({"i": i}, separators=(",", ":"))} for i in range(3)
    ]
    assert answers[0].headers["content-type"] == "application/json"
    assert server.connections == 1
    head = server.requests[0][0]
    assert head.startswith(b"POST /x HTTP/1.1\r\n") and b"\r\nhost: 127.0.0.1:" in head.lower()


async def test_a_chunked_answer_is_read_whole() -> None:
    async def chunked(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (b'{"a":', b" 1}"):
            w.write(b"%x\r\n%s\r\n" % (len(part), part))
            await w.drain()
            await asyncio.sleep(0.01)
        w.write(b"0\r\n\r\n")
        return True

    async with scripted(chunked) as server, client() as http:
        assert (await http.get(f"{server.base}/c")).json() == {"a": 1}
        assert (await http.get(f"{server.base}/c")).json() == {"a": 1}
    assert server.connections == 1


async def test_a_connection_the_server_closes_is_not_used_again() -> None:
    async def once(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(answer(b"{}"))
        return False  # closed after each answer, though it did not say so

    async with scripted(once) as server, client() as http:
        for _ in range(3):
            assert (await http.get(server.base + "/")).status_code == 200
            await asyncio.sleep(0.05)  # the close reaches the client
    assert server.connections == 3


async def test_an_answer_that_says_close_closes() -> None:
    async def closing(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(answer(b"{}", close=True))
        return True

    async with scripted(closing) as server, client() as http:
        for _ in range(2):
            assert (await http.get(server.base + "/")).status_code == 200
    assert server.connections == 2


async def test_bytes_after_an_answer_retire_its_connection() -> None:
    async def chatty(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(answer(b"{}") + b"HTTP/1.1 408 Request Timeout\r\n")  # and half another
        return True

    async with scripted(chatty) as server, client() as http:
        for _ in range(2):
            assert (await http.get(server.base + "/")).json() == {}
            await asyncio.sleep(0.05)
    assert server.connections == 2


async def test_a_server_that_hangs_up_without_answering_is_a_protocol_error() -> None:
    async def hang_up(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        return False

    async with scripted(hang_up) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.post(server.base + "/claim", json={})


async def test_silence_past_the_read_timeout_is_a_read_timeout_not_slowness() -> None:
    async def trickle(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        if b"/silent" in head:
            await asyncio.sleep(2)
            return False
        whole = answer(b'{"slow": true}')
        for i in range(0, len(whole), 20):  # 0.5 s in all, never 0.3 s silent
            w.write(whole[i : i + 20])
            await w.drain()
            await asyncio.sleep(0.1)
        return True

    async with scripted(trickle) as server, client(read=0.3) as http:
        assert (await http.get(server.base + "/slow")).json() == {"slow": True}
        started = asyncio.get_running_loop().time()
        with pytest.raises(httpx.ReadTimeout):
            await http.get(server.base + "/silent")
        assert asyncio.get_running_loop().time() - started < 1.5


async def test_nothing_listening_is_a_connect_error() -> None:
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{free_port()}/")


async def test_no_connection_free_within_the_pool_timeout_is_a_pool_timeout() -> None:
    async def slow(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.5)
        w.write(answer(b"{}"))
        return True

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with scripted(slow) as server, client(limits, pool=0.1) as http:
        first = asyncio.ensure_future(http.get(server.base + "/"))
        await asyncio.sleep(0.05)
        with pytest.raises(httpx.PoolTimeout):
            await http.get(server.base + "/")
        assert (await first).status_code == 200
        # Its place is free again once the first has its answer.
        assert (await http.get(server.base + "/")).status_code == 200


async def test_a_cancelled_call_leaves_no_answer_behind_for_the_next() -> None:
    async def late(server: Server, head: bytes, body: bytes, w: asyncio.StreamWriter) -> bool:
        if b"/late" in head:
            await asyncio.sleep(0.3)
        w.write(answer(json.dumps({"path": head.split()[1].decode()}).encode()))
        return True

    async with scripted(late) as server, client() as http:
        call = asyncio.ensure_future(http.get(server.base + "/late"))
        await asyncio.sleep(0.05)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert (await http.get(server.base + "/next")).json() == {"path": "/next"}
    assert server.connections == 2


def test_plain_http_without_a_proxy_takes_the_sdks_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)

    def transport_of(url: str) -> object:
        return JobnikClient(url)._http._client._transport

    assert isinstance(transport_of("http://manager:8080"), PlainHttpTransport)
    assert not isinstance(transport_of("https://manager:8443"), PlainHttpTransport)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert not isinstance(transport_of("http://manager:8080"), PlainHttpTransport)
    monkeypatch.setenv("NO_PROXY", "manager")
    assert isinstance(transport_of("http://manager:8080"), PlainHttpTransport)
