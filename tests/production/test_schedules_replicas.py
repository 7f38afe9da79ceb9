"""A schedule on the production profile (two manager replicas behind one URL, each
ticking every second, PostgreSQL, auth on): every time makes exactly one job, none made
twice by the two replicas, none lost while one replica is killed and restarted."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ..support.deployment import Deployment
from ..support.schedule_replicas import run_across_replicas

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_two_replicas_make_each_time_once_and_a_killed_one_loses_none(
    own_production: Deployment,
) -> None:
    # Each fifth second; the first replica down from the 15th second to the 25th.
    outcome = await run_across_replicas(
        own_production, "*/5 * * * * *", timedelta(seconds=5), before=15, down=10, after=15
    )
    assert outcome.problems() == [], outcome.listing()
    assert len(outcome.runs) >= 7
