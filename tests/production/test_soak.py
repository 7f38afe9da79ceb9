"""Three minutes of the soak (scripts/soak.py) on the production profile, on every CI
run: every fault kind at least once, then every check of support/soak.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.soak import run_soak

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


async def test_three_minutes_of_faults_lose_nothing(tmp_path: Path, amqp_url: str) -> None:
    # A fault every 20 s: the six kinds, then the first three again.
    report = await run_soak(3, tmp_path, fault_every=20)
    print(report.render())
    kinds = {fault.kind for fault in report.soak.faults}
    assert len(kinds) >= 6, kinds
    assert report.failures == [], report.render()
