"""sdk/README.md's examples run as written (on the in-memory fake), and what they print
checked against the comments that say what they print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Each example runs as a Python process of its own.
pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "sdk" / "README.md"


def _blocks(section: str) -> list[str]:
    text = README.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


def _runs_and_prints_what_it_says(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    said = [line.split("# ", 1)[1] for line in code.splitlines() if "print(" in line]
    assert said, "the example says what it prints"
    assert ran.stdout.splitlines() == said


def test_the_lifecycle_example(tmp_path: Path) -> None:
    [code] = _blocks("Lifecycle")
    _runs_and_prints_what_it_says(code, tmp_path)


def test_the_schedules_example(tmp_path: Path) -> None:
    [code] = _blocks("Schedules")
    _runs_and_prints_what_it_says(code, tmp_path)


def test_the_run_attempt_example(tmp_path: Path) -> None:
    """Section "Testing": the block that runs a handler's attempt."""
    [code] = [block for block in _blocks("Testing") if "asyncio.run(main())" in block]
    _runs_and_prints_what_it_says(code, tmp_path)
