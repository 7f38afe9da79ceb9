"""W3C trace context for entities created without one."""

from __future__ import annotations

import secrets


def new_traceparent(parent: str | None = None) -> str:
    """A fresh span; in the parent's trace when there is one."""
    trace_id = parent.split("-")[1] if parent else secrets.token_hex(16)
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"
