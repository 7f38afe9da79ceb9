"""PostgreSQL: the hot statements as literal SQL, named, a file per family (db/sql/).

A file holds queries (or parts of one) each under a `-- name: <name>` line, with
parameters written `:name` (a cast after one, `:n::int`, is PostgreSQL's own). A
`DirectStatement` is made from the text once: its parameters numbered as asyncpg's `$1`,
`$2`, ..., in order of first use, and those the caller does not give each run bound to
constants (the statuses the moves declare, say).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any

from .direct import GIVEN, Bind, DirectStatement

_NAME = re.compile(r"^-- name: (\w+)[ \t]*$", re.MULTILINE)
# `:name`, but not the second colon of a cast (`::type`) nor a name's own characters.
_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")


@cache
def queries(family: str) -> dict[str, str]:
    """The named queries of db/sql/<family>.sql, by name (what comes before the first
    name is the file's header)."""
    text = files(__package__).joinpath("sql", f"{family}.sql").read_text(encoding="utf-8")
    parts = _NAME.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def statement(sql: str, constants: Mapping[str, Any] | None = None) -> DirectStatement:
    """`sql` for asyncpg; `constants` are bound to the values given here, every other
    parameter to the one of that name a run gives."""
    constants = constants or {}
    order: list[str] = []

    def number(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in order:
            order.append(name)
        return f"${order.index(name) + 1}"

    text = _PARAMETER.sub(number, sql)
    unused = set(constants) - set(order)
    if unused:
        raise ValueError(f"constants the statement does not use: {sorted(unused)}")
    return DirectStatement(text, tuple(Bind(n, constants.get(n, GIVEN)) for n in order))
