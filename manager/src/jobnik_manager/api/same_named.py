"""Copying the fields two shapes name alike: rows to wire models, wire models to specs."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel


def same_named(source: object, target: Any, **given: Any) -> dict[str, Any]:
    """The fields of `target` (a pydantic model or a dataclass) read from `source`'s
    attributes of the same names, but for those `given`."""
    names = (
        target.model_fields
        if isinstance(target, type) and issubclass(target, BaseModel)
        else [f.name for f in dataclasses.fields(target)]
    )
    return {name: given[name] if name in given else getattr(source, name) for name in names}
