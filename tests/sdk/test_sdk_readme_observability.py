"""sdk/README.md's "Observability" examples run as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .test_sdk_readme_examples import _blocks, _runs_and_prints_what_it_says

# Each example runs as a Python process of its own.
pytestmark = pytest.mark.e2e


def test_the_observability_example(tmp_path: Path) -> None:
    [code] = [block for block in _blocks("Observability") if "asyncio.run(main())" in block]
    _runs_and_prints_what_it_says(code, tmp_path)


def test_the_log_context_example(tmp_path: Path) -> None:
    [code] = [block for block in _blocks("Observability") if "log_context(job_id" in block]
    script = tmp_path / "example.py"
    script.write_text(code)
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    [line] = [json.loads(text) for text in ran.stderr.splitlines()]
    said = json.loads(code.split("# ", 1)[1].splitlines()[0].replace("…", ""))
    assert {key: line[key] for key in said if key != "time"} == {
        key: value for key, value in said.items() if key != "time"
    }
