"""A schedule on the production profile (two manager replicas behind one URL, each
ticking every second, PostgreSQL, auth on): every time makes exactly one job, none made
twice by the two replicas, none lost while one replica is killed and restarted."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from ..support.deployment import Deployment
from ..support.profiles import production
from ..support.schedule_replicas import run_across_replicas

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def deployed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with production(request, tmp_path_factory.mktemp("schedules")) as d:
        yield d


async def test_two_replicas_make_each_time_once_and_a_killed_one_loses_none(
    deployed: Deployment,
) -> None:
    # Each fifth second; the first replica down from the 15th second to the 25th.
    outcome = await run_across_replicas(
        deployed, "*/5 * * * * *", timedelta(seconds=5), before=15, down=10, after=15
    )
    assert outcome.problems() == [], outcome.listing()
    assert len(outcome.runs) >= 7
