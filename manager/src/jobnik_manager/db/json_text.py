"""Reading stored JSON text: orjson where it reads a value exactly, the standard library
where it would not.

orjson parses several times faster, but reads an integer beyond 64 bits as a float
(losing digits) and refuses numbers past a double's range, both of which are valid JSON
that a client may have stored. Text with a run of 19 or more digits (what such an
integer needs) takes the standard library's path, as does anything orjson refuses.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(r"\d{19}")


def loads(text: str | bytes) -> Any:
    """The JSON value of `text`, every number as written."""
    probe = text.decode("utf-8", "surrogatepass") if isinstance(text, bytes) else text
    if _LONG_DIGITS.search(probe):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
