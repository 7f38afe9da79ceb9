"""Copying the fields two shapes name alike: rows to wire models, wire models to specs."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

from pydantic import BaseModel


def same_named(source: object, target: Any, **given: Any) -> dict[str, Any]:
    """The fields of `target` (a pydantic model or a dataclass) read from `source`'s
    attributes of the same names, but for those `given`."""
    return {
        name: given[name] if name in given else getattr(source, name) for name in _names(target)
    }


@cache
def _names(target: Any) -> tuple[str, ...]:
    """The names of `target`'s fields, looked up once per class: a create converts each
    of its tasks."""
    if isinstance(target, type) and issubclass(target, BaseModel):
        return tuple(target.model_fields)
    return tuple(f.name for f in dataclasses.fields(target))
