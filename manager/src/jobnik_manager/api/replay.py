"""Reading a request body in a middleware, and handing it on to the app behind it."""

from __future__ import annotations

from starlette.types import Message, Receive


async def read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The request's body, and whether it is all there (False once past `limit` bytes,
    or at a disconnect, which the app hears of in turn)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk: bytes = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True
        if size > limit:
            return b"".join(chunks), False


def replay(body: bytes, complete: bool, receive: Receive) -> Receive:
    """`receive` for the app: the bytes read so far first (all of the body when
    `complete`), then the rest of the stream."""
    replayed = False

    async def replayed_receive() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": not complete}

    return replayed_receive
