"""Free-form JSON objects accepted from clients.

PostgreSQL's jsonb refuses NUL characters and non-finite numbers that Python's json
module lets through, so they are refused here, with a 400, before they reach it.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator

MAX_DEPTH = 64


def _check(value: Any, path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels at {path}")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"NUL character in string at {path}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number at {path}")
    elif isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                raise ValueError(f"NUL character in key at {path}")
            _check(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]", depth + 1)


def _checked(value: dict[str, Any]) -> dict[str, Any]:
    _check(value, "$", 0)
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(_checked)]


def no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL character in string")
    return value
