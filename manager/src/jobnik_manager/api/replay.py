"""Handing a request body read by a middleware on to the app behind it."""

from __future__ import annotations

from starlette.types import Message, Receive


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
