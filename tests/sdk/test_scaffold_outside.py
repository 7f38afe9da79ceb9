"""scripts/try_scaffold.sh, run outside the repository with an empty uv cache: two
workers scaffolded from the SDK's wheel alone pass their own tests, run side by side in
one environment through a job across both, one of them built as an image from its own
directory and run as a container (with podman, where it is installed), and their Helm
values render with the worker chart. Needs the package index (and, for the chart, the
repository's `deploy` group)."""

from __future__ import annotations

import os
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from jobnik_sdk.scaffold._template import template_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_two_scaffolded_workers_outside_the_repository(tmp_path: Path) -> None:
    work = tmp_path / "try"
    assert not work.resolve().is_relative_to(ROOT)
    # The image's build reaches PyPI through this machine's CA bundle, where it has one.
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "try_scaffold.sh"), str(work)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **({"CA_BUNDLE": str(ca)} if ca.exists() else {})},
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "all steps passed" in said

    # The wheel carries the template whole, and is the lock's only jobnik-sdk.
    [wheel] = (work / "dist").glob("jobnik_sdk-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        bundled = {
            name.removeprefix("jobnik_sdk/_template/")
            for name in archive.namelist()
            if name.startswith("jobnik_sdk/_template/")
        }
    assert bundled == {str(f) for f in template_files(ROOT / "worker-boilerplate")}
    for project in ("tile-render", "tile-publish"):
        lock = tomllib.loads((work / project / "uv.lock").read_text())
        [sdk] = [p for p in lock["package"] if p["name"] == "jobnik-sdk"]
        assert sdk["source"] == {"path": f"wheels/{wheel.name}"}
        assert (work / project / "wheels" / wheel.name).read_bytes() == wheel.read_bytes()

    # Each stage ran on its own worker; the image's worker ran a job of its own.
    assert said.count(": COMPLETED") == 2
    assert "stage tile-render: ['COMPLETED', 'COMPLETED'] by ['render-1']" in said
    assert "stage tile-publish: ['COMPLETED', 'COMPLETED'] by ['publish-1']" in said
    assert "stage tile-publish: ['COMPLETED', 'COMPLETED'] by ['image-1']" in said
    assert "no function 'publish'" in said
    assert "Deployment tile-publish-worker-tile-publish" in said
