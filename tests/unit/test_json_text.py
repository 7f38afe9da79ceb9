"""Stored JSON text read back with every number as written."""

from __future__ import annotations

import json

import pytest

from jobnik_manager.db.json_text import loads


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 123456789012345678901234567890}',
        "[-123456789012345678901234567890, 1.5, 9223372036854775807]",
        '{"s": "12345678901234567890123", "n": 1}',
        "1e400",
        '{"k": "v", "n": [1, 2, {"x": null}]}',
    ],
)
def test_reads_as_the_standard_library_does(text: str) -> None:
    assert loads(text) == json.loads(text)
    assert loads(text.encode()) == json.loads(text)


def test_large_integers_stay_integers() -> None:
    value = loads('{"a": 123456789012345678901234567890}')["a"]
    assert isinstance(value, int) and value == 123456789012345678901234567890
