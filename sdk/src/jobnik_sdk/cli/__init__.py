"""The `jobnik` command line: list, show and steer jobs, follow their events, wait for
them. It needs the SDK's `cli` extra (typer and rich); `jobnik_sdk` itself does not
import this package.

Exit codes: 0 ok, 1 a waited-for job ended FAILED or ABORTED, 2 a usage error, 3 the
job, stage or task does not exist, 4 the manager refused the call (400, 401, 403, 409
and other 4xx), 5 the manager was not reached (or answered 5xx), 6 `wait` timed out.
"""

from .app import app, main

__all__ = ["app", "main"]
