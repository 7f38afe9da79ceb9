"""A load balancer in front of several manager replicas, for tests and the soak: one URL,
each request sent to the next replica in turn, and on to the one after it when a replica
refuses the connection, or goes away before answering a request that may be sent twice
(as nginx's `proxy_next_upstream error` does), so a replica that is down costs its
clients nothing but time. It counts the answers its clients saw, by the
role of the token they sent and the status (502 when no replica could be reached), and
serves those counts at GET /_balancer/answers. It also stands in for an OpenTelemetry
collector: span exports POSTed under /_otlp/ are accepted and counted.

    python -m tests.support.balancer --port P --to http://127.0.0.1:A,http://127.0.0.1:B

BALANCER_ROLES_FILE names a JSON file of token -> role, reread when a token it does not
know comes (others count as "anonymous"; the tokens themselves are never printed).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import time
from collections import Counter
from pathlib import Path

import httpx
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

# Headers that belong to one connection, not to the request or answer it carries.
_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "content-length",
    "content-encoding",  # httpx hands the body over decoded
}

_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}


class Balancer:
    def __init__(self, targets: list[str], roles: Path | None) -> None:
        self._targets = [t.rstrip("/") for t in targets]
        self._turn = itertools.cycle(range(len(self._targets)))
        self._roles_file = roles
        self._roles: dict[str, str] = {}
        # Claims may be held open for a while (long polls): no read limit of our own.
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=2.0),
            # Idle connections dropped well before the managers' own keep-alive timeout
            # (uvicorn's 5 s): otherwise a request may go out on a connection the manager
            # is closing at that moment, and is lost unanswered.
            limits=httpx.Limits(
                max_connections=None, max_keepalive_connections=200, keepalive_expiry=2.0
            ),
        )
        self.answers: Counter[tuple[str, int]] = Counter()
        self.trace_exports = 0
        # Each 5xx with its time, for telling one during a database restart from another.
        self.server_errors: list[dict[str, object]] = []

    def _role(self, request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return "anonymous"
        if token not in self._roles and self._roles_file is not None:
            with contextlib.suppress(OSError, ValueError):
                self._roles = json.loads(self._roles_file.read_text())
        return self._roles.get(token, "anonymous")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self._http.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        request = Request(scope, receive)
        if request.url.path.startswith("/_otlp/"):
            # A stand-in for the OpenTelemetry collector the managers export spans to.
            self.trace_exports += 1
            await request.body()
            await Response(status_code=200)(scope, receive, send)
            return
        if request.url.path == "/_balancer/answers":
            body = {
                "answers": [
                    {"role": role, "status": status, "count": n}
                    for (role, status), n in sorted(self.answers.items())
                ],
                "traceExports": self.trace_exports,
                "serverErrors": self.server_errors,
            }
            await JSONResponse(body)(scope, receive, send)
            return
        response = await self._forward(request)
        role = self._role(request)
        self.answers[(role, response.status_code)] += 1
        if response.status_code >= 500 and len(self.server_errors) < 10_000:
            self.server_errors.append(
                {
                    "time": time.time(),
                    "role": role,
                    "status": response.status_code,
                    "path": f"{request.method} {request.url.path}",
                    "body": bytes(response.body[:300]).decode(errors="replace"),
                }
            )
        await response(scope, receive, send)

    async def _forward(self, request: Request) -> Response:
        body = await request.body()
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP | {"host"}]
        start = next(self._turn)
        for i in range(len(self._targets)):
            target = self._targets[(start + i) % len(self._targets)]
            url = f"{target}{request.url.path}"
            if request.url.query:
                url = f"{url}?{request.url.query}"
            try:
                answer = await self._http.request(
                    request.method, url, content=body, headers=headers
                )
            except httpx.ConnectError:
                continue  # not listening (killed, restarting): the next one
            except httpx.TransportError as exc:
                # Sent, and the replica went away before answering. As nginx does, a
                # request that may be sent twice goes on to the next replica; a POST or
                # PATCH may have been done, so it is not sent again.
                if request.method in _IDEMPOTENT:
                    continue
                return _gateway_error(f"the manager went away while answering: {exc!r}")
            kept = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in _HOP]
            return Response(answer.content, status_code=answer.status_code, headers=dict(kept))
        return _gateway_error("no manager replica is reachable")


def _gateway_error(message: str) -> Response:
    return JSONResponse({"message": message, "code": "BAD_GATEWAY"}, status_code=502)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--to", required=True, help="replica base URLs, comma-separated")
    args = parser.parse_args(argv)
    roles = os.environ.get("BALANCER_ROLES_FILE")
    app = Balancer(args.to.split(","), Path(roles) if roles else None)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
