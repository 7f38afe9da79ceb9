"""What the manager's own ASGI middlewares share: they act on HTTP requests alone."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """A middleware for HTTP requests: anything else passes through untouched (a lifespan
    scope must reach the app, which starts its background loops on it; a websocket
    finds no route there and is closed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request."""
        raise NotImplementedError
