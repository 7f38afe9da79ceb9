"""Test tiers. Every test is in exactly one:

- unit: no I/O (domain rules, the SDK's pure parts, the worker template);
- integration: real databases (SQLite, PostgreSQL) or RabbitMQ, the app in-process;
- e2e: real processes (manager and worker subprocesses), real RabbitMQ;
- slow: chaos, races and long concurrency runs.

A test's folder gives its tier unless it is marked with one itself (a slow test in an
otherwise fast file, or a file of process tests among in-process ones). `pytest` alone
runs unit and integration (addopts); `-m e2e` and `-m slow` run the others. Tiers
that run real processes get a longer per-test timeout than pytest-timeout's default.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test modules are compiled with pytest's assertion rewriting, which caches them as
# bytecode unless Python is told to write none (PYTHONDONTWRITEBYTECODE, as on CI
# machines): then every test process rewrites every test module on every run, a second
# and a half each, and compiles the project's own packages again (their sources are not
# in site-packages, which `uv sync --compile-bytecode` compiles). Set here, in the first
# conftest loaded, before tests/conftest.py imports the project: what is imported from
# here on is cached in __pycache__ (git ignores it), and the manager and worker
# processes the tests start read it.
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parent

TIERS = ("unit", "integration", "e2e", "slow")

# The most specific folder wins.
TIER_BY_FOLDER = {
    "tests/unit": "unit",
    "tests/integration": "integration",
    "tests/sdk": "integration",
    "tests/dispatch": "e2e",
    "tests/reliability": "e2e",
    "tests/chaos": "slow",
    "worker-boilerplate/tests": "unit",
    "deploy/tests": "integration",
}

# Seconds; unit and integration tests take the `timeout` setting in pyproject.toml.
TIMEOUT_BY_TIER = {"e2e": 300, "slow": 900}


def _folder_tier(path: Path) -> str | None:
    try:
        relative = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    matches = [f for f in TIER_BY_FOLDER if relative.startswith(f"{f}/")]
    return TIER_BY_FOLDER[max(matches, key=len)] if matches else None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    untiered = []
    for item in items:
        marked = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
        if len(marked) > 1:
            raise pytest.UsageError(f"{item.nodeid} is marked {sorted(marked)}: one tier only")
        tier = next(iter(marked), None) or _folder_tier(item.path)
        if tier is None:
            untiered.append(item.nodeid)
            continue
        if not marked:
            item.add_marker(tier)
        if tier in TIMEOUT_BY_TIER and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUT_BY_TIER[tier]))
    if untiered:
        raise pytest.UsageError(
            "tests outside the tier folders (see TIER_BY_FOLDER in conftest.py) need a "
            f"tier mark ({', '.join(TIERS)}): {', '.join(untiered[:5])}"
        )
