"""An id prefix (as the dashboard shows ids: their first 8 hex digits) as a range of ids,
so that finding the ids it starts is a range scan of the primary key's index."""

from __future__ import annotations

import re
import uuid

_HEX = re.compile(r"[0-9a-f]{1,32}")


def id_range(prefix: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The first and last id that start with `prefix` (hex digits, any case, dashes
    anywhere ignored), or None when it is not such a prefix."""
    digits = prefix.replace("-", "").lower()
    if not _HEX.fullmatch(digits):
        return None
    pad = 32 - len(digits)
    return uuid.UUID(digits + "0" * pad), uuid.UUID(digits + "f" * pad)
