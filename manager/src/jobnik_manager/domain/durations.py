"""Durations as people write them: `7d`, `12h`, `30m`, `90s`, `1d12h`, or ISO 8601
(`P7D`, `PT12H`)."""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import TypeAdapter, ValidationError

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_SHORT = re.compile(r"(?:(\d+(?:\.\d+)?)([wdhms]))+")
_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")
_ISO = TypeAdapter(timedelta)
FORMS = "a duration such as 7d, 12h, 30m, 90s or 1d12h (or ISO 8601, e.g. P7D)"


def parse_duration(text: str) -> timedelta:
    """The duration `text` writes; ValueError (naming the forms taken) otherwise, or for
    none at all."""
    written = text.strip().lower()
    if _SHORT.fullmatch(written):
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(written))
        duration = timedelta(seconds=seconds)
    elif written.startswith("p"):
        try:
            duration = _ISO.validate_python(written.upper())
        except ValidationError:
            raise ValueError(f"{text!r} is not {FORMS}") from None
    else:
        raise ValueError(f"{text!r} is not {FORMS}")
    if duration <= timedelta(0):
        raise ValueError(f"{text!r} is no time at all: give {FORMS}")
    return duration
