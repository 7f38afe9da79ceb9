"""Workers as the SDK's tests run them: no signal handlers of their own (the test runner
keeps those), and pauses of a few milliseconds between empty claims."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from jobnik_sdk import Backoff, Worker

QUICK = Backoff(initial=timedelta(milliseconds=5), maximum=timedelta(milliseconds=20))


def worker(client: Any, stage_types: str | list[str], handler: Any, **options: Any) -> Worker[Any]:
    """A Worker on `client` for `stage_types`; `options` are Worker's, over these."""
    options.setdefault("poll_backoff", QUICK)
    options.setdefault("handle_signals", False)
    return Worker(client, stage_types=stage_types, handler=handler, **options)
