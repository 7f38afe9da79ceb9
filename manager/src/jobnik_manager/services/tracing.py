"""W3C trace context for entities created without one."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator


def new_traceparent(parent: str | None = None) -> str:
    """A fresh span; in the parent's trace when there is one."""
    trace_id = parent.split("-")[1] if parent else secrets.token_hex(16)
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"


def new_traceparents(parent: str) -> Iterator[str]:
    """Fresh spans in the parent's trace, as many as are taken, from few reads of the
    system's randomness (one per 1,024 spans): a create may make 100,000 of them."""
    prefix = f"00-{parent.split('-')[1]}-"
    while True:
        spans = os.urandom(8 * 1024).hex()
        for i in range(0, len(spans), 16):
            yield f"{prefix}{spans[i : i + 16]}-01"
