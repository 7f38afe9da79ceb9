"""The command blocks of the operator's pages (troubleshooting, the production checklist)
run as written, pasted into bash, against a manager process with authentication on and
a job in it: every block exits 0 and says what its comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ..support.processes import ROOT, manager_command, manager_process

pytestmark = pytest.mark.e2e  # a manager process, and the CLIs as processes

PAGES = ["docs/troubleshooting.md", "docs/checklist.md"]


def blocks(page: str) -> list[str]:
    text = (ROOT / page).read_text()
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


@dataclass(frozen=True)
class Manager:
    url: str
    database_url: str
    token: str
    job_id: str


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Manager]:
    tmp = tmp_path_factory.mktemp("doc-commands")
    database_url = f"sqlite+aiosqlite:///{tmp / 'jobnik.db'}"
    manager_command(database_url, "migrate")
    said = manager_command(database_url, "tokens", "create", "--name", "oncall", "--role", "admin")
    [token] = re.findall(r"jnk_\S+", said)
    with manager_process(database_url, log=tmp / "manager.log", JOBNIK_AUTH="on") as url:
        job = httpx.post(
            f"{url}/v1/jobs",
            json={"name": "nightly-tiles", "data": {}, "stages": [{"type": "tiles", "data": {}}]},
            headers={"authorization": f"Bearer {token}"},
        )
        assert job.status_code == 201, job.text
        yield Manager(url, database_url, token, job.json()["id"])


def run(block: str, manager: Manager) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        # The commands of this environment's installs, as an activated one would give.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "JOBNIK_URL": manager.url,
        "JOBNIK_TOKEN": manager.token,
        "JOBNIK_DATABASE_URL": manager.database_url,
        "JOB": manager.job_id[:8],  # as a reader copies it from the dashboard
        "COLUMNS": "100",
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("page", "index"),
    [(page, i) for page in PAGES for i in range(len(blocks(page)))],
)
def test_each_command_block_runs_as_written(manager: Manager, page: str, index: int) -> None:
    block = blocks(page)[index]
    done = run(block, manager)
    assert done.returncode == 0, f"{page} block {index + 1}:\n{block}\n{done.stdout}{done.stderr}"
    out = done.stdout
    if "/v1/jobs?page_size=1" in block or '/v1/jobs"' in block:
        assert "401" in out.splitlines()  # no token sent, and auth is on
    if "allowed" in block:
        assert "allowed" in out.splitlines()
    if "jobs show" in block:
        assert "nightly-tiles" in out
    if "readiness" in block:
        assert '{"status":"ok"}' in out
    if "tokens list" in block:
        assert "oncall" in out


def test_the_pages_have_command_blocks() -> None:
    for page in PAGES:
        assert blocks(page), page
