"""Clients for tests of the SDK Worker that stand in front of another one."""

from __future__ import annotations

from typing import Any


class PassThrough:
    """Passes every call it does not define itself to `inner`: a subclass defines only
    the calls it watches or scripts."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
