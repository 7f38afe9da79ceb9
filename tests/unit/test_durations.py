"""Durations as people write them, for the retention setting and the cleanup command."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobnik_manager.domain.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7d", timedelta(days=7)),
        ("12h", timedelta(hours=12)),
        ("30m", timedelta(minutes=30)),
        ("90s", timedelta(seconds=90)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("2w", timedelta(weeks=2)),
        ("1.5h", timedelta(minutes=90)),
        (" 7D ", timedelta(days=7)),
        ("P7D", timedelta(days=7)),
        ("PT12H", timedelta(hours=12)),
    ],
)
def test_the_forms_taken(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "7", "soon", "7 days", "d7", "-1d", "0d", "0s", "PT0S", "P"])
def test_anything_else_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match="7d, 12h, 30m"):
        parse_duration(text)
