"""sdk/README.md's "Lifecycle" example, run as written (on the in-memory fake), and what
it prints checked against the comments that say what it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_lifecycle_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    readme = (ROOT / "sdk" / "README.md").read_text()
    section = readme.split("\n## Lifecycle\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"^```python\n(.*?)^```", section, re.M | re.S)
    script = tmp_path / "lifecycle.py"
    script.write_text(code)
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    said = [line.split("# ", 1)[1] for line in code.splitlines() if "print(" in line]
    assert ran.stdout.splitlines() == said
