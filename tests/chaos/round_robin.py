"""An httpx transport that spreads requests over several managers in turn, as a load
balancer in front of the replicas would."""

from __future__ import annotations

import itertools

import httpx


class RoundRobinTransport(httpx.AsyncBaseTransport):
    def __init__(self, base_urls: list[str]) -> None:
        self._targets = itertools.cycle([httpx.URL(u) for u in base_urls])
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = next(self._targets)
        request.url = request.url.copy_with(
            scheme=target.scheme, host=target.host, port=target.port
        )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
