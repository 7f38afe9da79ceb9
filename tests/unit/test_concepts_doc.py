"""docs/concepts.md draws each status diagram from the transition tables: every legal
move, who makes it, and the statuses a row is created in; no more, no less."""

from __future__ import annotations

import re

import pytest

from jobnik_protocol.transitions import (
    CREATED_AS,
    JOB_TRANSITIONS,
    REPLAYED,
    STAGE_TRANSITIONS,
    TASK_TRANSITIONS,
    Actor,
)

from ..support.processes import ROOT

pytestmark = pytest.mark.unit

TABLES = {"Job": ("JOB", JOB_TRANSITIONS), "Stage": ("STAGE", STAGE_TRANSITIONS),
          "Task": ("TASK", TASK_TRANSITIONS)}  # fmt: skip


def diagrams() -> dict[str, set[tuple[str, str, str]]]:
    """Each section's diagram as (from, to, label) arrows; `[*]` for a creation."""
    text = (ROOT / "docs" / "concepts.md").read_text()
    found = {}
    for title in TABLES:
        section = text.split(f"### {title}\n", 1)[1]
        block = section.split("```mermaid\n", 1)[1].split("```", 1)[0]
        arrows = re.findall(r"^\s+(\S+) --> (\w+)(?:: (\w+))?$", block, re.MULTILINE)
        found[title] = {(a, b, label) for a, b, label in arrows}
    return found


def test_each_diagram_is_its_transition_table() -> None:
    drawn = diagrams()
    for title, (entity, table) in TABLES.items():
        expected = {("[*]", status, "") for status in CREATED_AS[entity]}
        expected |= {(a.value, b.value, actor.value.lower()) for (a, b), actor in table.items()}
        expected |= {(a, b, Actor.REPLAY.value.lower()) for a, b in REPLAYED[entity]}
        assert drawn[title] == expected, title
