"""What a request body's bytes tell before it is parsed (text that cannot be stored,
nesting and volume), and its JSON value, parsed once for every reader of the request
(`parse`).

PostgreSQL refuses NUL characters in text and jsonb, and no UTF-8 encoder (the drivers',
the JSON answers') takes a lone surrogate, which JSON's `\\uD800`-style escapes can
spell; such strings must never reach a store or an answer. A body of small values may
also take twenty times its size once parsed. Each check is a pass over the bytes at C
speed (a few milliseconds for 10 MB) that either clears the body or raises a suspicion
that a slower, exact pass settles (tens of milliseconds per MB, so mostly for bodies
that are refused):

- a NUL byte, or bytes that are not UTF-8 (encoded surrogates included): refused;
- the number of values and the depth of nesting are counted with the commas and
  brackets that strings may hold; a body over a limit by that count is counted again
  with its strings left out;
- a `\\u0000` or lone surrogate escape: refused, naming the field (the body is parsed to
  find it, after the volume checks).

`parse` counts the volume, then gives the body to orjson, which refuses bytes that are
not UTF-8, lone surrogates and nesting past its depth, each with one error, and which
leaves only a `\\u0000` escape to look for. What orjson refuses, or would read
differently from the standard library (integers beyond 64 bits, numbers past a double's
range, a byte order mark), takes the exact path: `scan`, then the standard library's
parser, whose words for a syntax error the routes have always answered with.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from .json_values import MAX_DEPTH

# A body wraps its free-form objects (nested up to MAX_DEPTH below themselves) in a few
# levels of its own: a job's stages, their tasks, each task's data.
MAX_BODY_DEPTH = MAX_DEPTH + 16

# A JSON string: its quotes and what lies between, escapes taken whole.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# A \u escape of a NUL or a surrogate, unless its backslash is itself escaped; and the
# low half of a surrogate pair.
_ESCAPE = re.compile(rb"\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_LOW_HALF = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_OPENS = bytes.maketrans(b"{[", b"((")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"{}[]")
# A run of digits as long as an integer beyond 64 bits needs (orjson reads it as a float).
_LONG_DIGITS = re.compile(rb"\d{19}")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: str
    message: str


def invalid(message: str) -> Refusal:
    return Refusal(400, "VALIDATION_ERROR", message)


_NUL = invalid("body: holds a NUL byte, which JSON text in UTF-8 never does")


def too_large(message: str) -> Refusal:
    return Refusal(413, "PAYLOAD_TOO_LARGE", message)


def larger_than(max_bytes: int) -> Refusal:
    return too_large(
        f"body: larger than {max_bytes:,} bytes, the most a request may carry; send the "
        "work in several calls"
    )


def unstorable(text: str) -> str | None:
    """What in `text` cannot be stored (a NUL or a lone surrogate), or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return f"{'a NUL character' if found[0] == chr(0) else 'a lone surrogate'} ({_shown(found[0])})"


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A body that is not JSON: the routes answer it (400) in their own words, which
    `message` repeats for those who must answer first (the authenticator)."""

    message: str


def parse(body: bytes, *, max_values: int) -> Any:
    """The JSON value of `body`; or the Refusal that the API answers it with before any
    route sees it; or Unreadable. A client's body never makes it raise."""
    if b"\x00" in body:
        return _NUL
    refusal = _volume(body, max_values)
    if refusal is not None:
        return refusal
    if not body.startswith(_BOM) and _LONG_DIGITS.search(body) is None:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            if exc.msg.startswith("depth limit"):
                return _too_deep()
        else:
            found = _escapes(body) if b"\\u0000" in body else None
            return value if found is None else found
    try:
        refusal = scan(body, max_values=max_values)
        if refusal is not None:
            return refusal
        return json.loads(body)
    except json.JSONDecodeError as exc:
        return Unreadable(f"{exc.pos}: JSON decode error")  # FastAPI's words for it
    except RecursionError:  # nesting that closes some on the way down
        return _too_deep()
    except ValueError:
        return Unreadable("There was an error parsing the body")  # FastAPI's words


def _too_deep() -> Refusal:
    return invalid(f"body: nested deeper than {MAX_BODY_DEPTH} levels")


def scan(body: bytes, *, max_values: int) -> Refusal | None:
    """Why `body` must be refused unparsed, or None if the parser may have it."""
    if b"\x00" in body:
        return _NUL
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return invalid(f"body: not valid UTF-8 (at byte {exc.start})")
    return _volume(body, max_values) or _escapes(body)


def _volume(body: bytes, max_values: int) -> Refusal | None:
    over = _values(body) > max_values
    deep = _nests_deeper(body, MAX_BODY_DEPTH)
    if (over or deep) and b'"' in body:
        bare = _without_strings(body)
        over = over and _values(bare) > max_values
        deep = deep and _nests_deeper(bare, MAX_BODY_DEPTH)
    if over:
        return too_large(
            f"body: holds more than {max_values:,} JSON values; send fewer in each call"
        )
    if deep:
        return invalid(f"body: nested deeper than {MAX_BODY_DEPTH} levels")
    return None


def _values(text: bytes) -> int:
    """At least the number of JSON values in `text` (each value but the first follows a
    comma or opens a container); exact for text without strings and empty containers."""
    return 1 + text.count(b",") + text.count(b"{") + text.count(b"[")


def _nests_deeper(text: bytes, limit: int) -> bool:
    """Whether more than `limit` objects or arrays open in `text` one inside the other
    with none closing in between: how deep nesting is spelled. Nesting that closes some
    on the way down is left to the parser (which stops at a thousand levels) and to the
    models (free-form objects: `MAX_DEPTH`); so are brackets that strings hold."""
    return text.translate(None, _NOT_BRACKETS).translate(_OPENS).find(b"(" * (limit + 1)) >= 0


def _without_strings(body: bytes) -> bytes:
    return _STRING.sub(b'""', body)


def _escapes(body: bytes) -> Refusal | None:
    found = _unstorable_escape(body)
    if found is None:
        return None
    at, code = found
    what = "a NUL character" if code == "0000" else "a lone surrogate"
    problem = f"{what} (\\u{code})"
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return invalid(f"body: {problem} at byte {at}; such text cannot be stored")
    where = _first_unstorable(value, ())
    if where is None:  # cannot be: the parser decodes what the escape spells
        return invalid(f"body: {problem}; such text cannot be stored")
    path, in_key, what_found = where
    place = "in an object key" if in_key else "in a string"
    return invalid(f"{_dotted(path)}: {what_found} {place}; such text cannot be stored")


def _unstorable_escape(body: bytes) -> tuple[int, str] | None:
    """The offset and code of the first escape that spells a NUL or a lone surrogate."""
    pair_ends = -1
    for found in _ESCAPE.finditer(body):
        start = found.start()
        if start < pair_ends or _escaped(body, start):
            continue
        code = found[1].decode().lower()
        if code[1] in "89ab" and _LOW_HALF.match(body, found.end()):
            pair_ends = found.end() + 6
            continue
        return start, code
    return None


def _escaped(body: bytes, at: int) -> bool:
    """Whether the backslash at `at` is itself escaped: an odd run of them before it."""
    start = at
    while start and body[start - 1] == 0x5C:
        start -= 1
    return (at - start) % 2 == 1


def _first_unstorable(value: Any, path: tuple[str | int, ...]) -> Any:
    """(path, in a key?, what) of the first string in `value` that cannot be stored."""
    if isinstance(value, str):
        what = unstorable(value)
        return (path, False, what) if what else None
    if isinstance(value, dict):
        for key, item in value.items():
            if what := unstorable(key):
                return (path, True, what)
            if found := _first_unstorable(item, (*path, key)):
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if found := _first_unstorable(item, (*path, i)):
                return found
    return None


def printable(text: str) -> str:
    """`text` with what cannot be stored (or sent back) spelled as escapes."""
    return _UNSTORABLE.sub(lambda m: _shown(m[0]), text)


def _dotted(path: tuple[str | int, ...]) -> str:
    """A location as the validation errors give theirs (`stages.0.tasks.3.data`)."""
    return ".".join(printable(str(p)) for p in path) or "body"


def _shown(char: str) -> str:
    return f"\\u{ord(char):04x}"
