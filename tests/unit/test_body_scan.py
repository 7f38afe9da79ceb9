"""The checks of a body's bytes before it is parsed: which escapes spell text that
cannot be stored, and where the volume and nesting limits fall; and the one parse of a
body (`parse`): the value the standard library reads, or the refusal `scan` words."""

from __future__ import annotations

import json

import pytest

from jobnik_manager.api.body_scan import MAX_BODY_DEPTH, Refusal, Unreadable, parse, scan

# As JSON text: each string is put between quotes, in an object, as a value and a key.
STORABLE = [
    r"plain",
    r"\ud83c\udf0d",  # a surrogate pair: one character
    r"\uD83C\uDF0D",
    r"\\u0000",  # an escaped backslash, then the text u0000
    r"\\\\u0000",
    r"\\\ud83c\udf0d",  # an escaped backslash, then a pair
    r"\u00e9\u05e9\u0001",
    "שלום 🌍",
]
UNSTORABLE = [
    (r"\u0000", "a NUL character"),
    (r"a\\\u0000", "a NUL character"),  # an escaped backslash, then a NUL
    (r"\udfff", "a lone surrogate"),
    (r"\uDFFF", "a lone surrogate"),
    (r"\ud800x", "a lone surrogate"),
    (r"\ud800", "a lone surrogate"),
    (r"\udc00\ud800", "a lone surrogate"),
    (r"\\ud83d\ude00", "a lone surrogate"),  # the high half is text, the low one alone
    (r"\ud83d\\ude00", "a lone surrogate"),
]


def body(text: str, key: str = "k") -> bytes:
    return f'{{"{key}": "{text}", "n": [1, {{"deep": "x"}}]}}'.encode()


@pytest.mark.parametrize("text", STORABLE)
def test_storable_text_passes(text: str) -> None:
    assert scan(body(text), max_values=100) is None
    assert scan(body("x", key=text), max_values=100) is None


@pytest.mark.parametrize(("text", "what"), UNSTORABLE)
def test_unstorable_text_is_refused_where_it_is(text: str, what: str) -> None:
    refusal = scan(body(text), max_values=100)
    assert refusal is not None
    assert (refusal.status, refusal.code) == (400, "VALIDATION_ERROR")
    assert refusal.message.startswith(f"k: {what}"), refusal.message
    nested = f'{{"a": [{{"b": "{text}"}}]}}'.encode()
    refusal = scan(nested, max_values=100)
    assert refusal is not None and refusal.message.startswith(f"a.0.b: {what}")
    refusal = scan(body("x", key=text), max_values=100)
    assert refusal is not None
    assert refusal.message.startswith(f"body: {what}") and "key" in refusal.message


def test_unparsable_body_is_refused_by_offset() -> None:
    refusal = scan(b'{"k": "\\u0000"', max_values=100)
    assert refusal is not None and "at byte 7" in refusal.message


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"k": "a\x00b"}', "NUL byte"),
        (b'{"k": "\xff"}', "not valid UTF-8 (at byte 7)"),
        (b'{"k": "\xed\xa0\x80"}', "not valid UTF-8"),  # an encoded surrogate
        ('{"k": 1}'.encode("utf-16"), "NUL byte"),
    ],
)
def test_bytes_that_are_no_utf8_json_are_refused(raw: bytes, says: str) -> None:
    refusal = scan(raw, max_values=100)
    assert refusal is not None and says in refusal.message


def test_values_are_counted_without_what_strings_hold() -> None:
    values = json.dumps([1] * 99).encode()  # 100 values
    assert scan(values, max_values=100) is None
    refusal = scan(json.dumps([1] * 100).encode(), max_values=100)
    assert refusal is not None and (refusal.status, refusal.code) == (413, "PAYLOAD_TOO_LARGE")
    commas = json.dumps(["a,b,c{[" * 100]).encode()
    assert scan(commas, max_values=100) is None


def test_nesting_in_a_row_is_refused_beyond_the_limit() -> None:
    at_limit = b"[" * MAX_BODY_DEPTH + b"]" * MAX_BODY_DEPTH
    assert scan(at_limit, max_values=1000) is None
    objects = b'{"a": ' * (MAX_BODY_DEPTH + 1) + b"1" + b"}" * (MAX_BODY_DEPTH + 1)
    refusal = scan(objects, max_values=1000)
    assert (
        refusal is not None
        and refusal.message == f"body: nested deeper than {MAX_BODY_DEPTH} levels"
    )
    in_a_string = json.dumps({"k": "[" * 500}).encode()
    assert scan(in_a_string, max_values=1000) is None


# Bodies whose value orjson reads as the standard library does, and those it would read
# otherwise or refuse though they are JSON: each must parse to the standard library's.
PARSED_AS_JSON = [
    b'{"stageTypes": ["a", "b"], "limit": 10, "withContext": true}',
    b'{"k": "\\ud83c\\udf0d", "e": "\\u00e9", "raw": "\xd7\xa9\xf0\x9f\x8c\x8d"}',
    b'{"f": 0.1, "g": -1.5e-7, "h": 1e308, "n": null, "z": -0}',
    b'{"big": 123456789012345678901234567890, "neg": -98765432109876543210}',
    b'{"id": "1234567890123456789012345"}',  # a long run of digits in a string
    b"\xef\xbb\xbf{}",  # a byte order mark
    b'{"inf": 1e999}',  # past a double: the models refuse it, with its field named
    b'{"nan": NaN}',
    b'{"a": 1, "a": 2}',
    b"[]",
    b"0",
]


@pytest.mark.parametrize("raw", PARSED_AS_JSON)
def test_parse_reads_what_the_standard_library_reads(raw: bytes) -> None:
    value = parse(raw, max_values=100)
    expected = json.loads(raw)
    assert json.dumps(value) == json.dumps(expected)
    assert type(value) is type(expected)


@pytest.mark.parametrize(("text", "what"), UNSTORABLE)
def test_parse_refuses_unstorable_text_where_it_is(text: str, what: str) -> None:
    refusal = parse(body(text), max_values=100)
    assert isinstance(refusal, Refusal)
    assert (refusal.status, refusal.code) == (400, "VALIDATION_ERROR")
    assert refusal.message.startswith(f"k: {what}"), refusal.message


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"k": "\xff\xfe"}', "not valid UTF-8"),
        (b'{"k": "\xed\xbf\xbf"}', "not valid UTF-8"),  # an encoded surrogate
        (b'{"k": "a\x00"}', "NUL byte"),
        (b"[" * 5000 + b"]" * 5000, "nested deeper"),
        # Nesting that closes some on the way down, past any parser's depth.
        (b"[" + b"[],[" * 5000 + b"]" * 5001, "nested deeper"),
        (json.dumps([1] * 200_001).encode(), "more than 100,000 JSON values"),
    ],
)
def test_parse_refuses_what_no_route_may_take(raw: bytes, says: str) -> None:
    refusal = parse(raw, max_values=100_000)
    assert isinstance(refusal, Refusal) and says in refusal.message, refusal


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"a": ', "6: JSON decode error"),
        (b'{"a": 1,}', "8: JSON decode error"),
        (b"stageTypes=a", "0: JSON decode error"),
    ],
)
def test_parse_leaves_what_is_not_json_to_the_routes_words(raw: bytes, words: str) -> None:
    assert parse(raw, max_values=100) == Unreadable(words)
