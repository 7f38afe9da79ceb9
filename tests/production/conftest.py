"""The deployments the tests of this folder run against: the production profile
(docs/production.md) and the minimal one, each started once per module."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from ..conftest import POSTGRES_URL, _admin
from ..support.deployment import Deployment, deployment
from ..support.soak_scenarios import STAGE_TYPES


@pytest.fixture(scope="module", params=["production", "minimal"])
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """A deployment with one template worker per stage type of the scenarios (two for
    render), handing out its producer, operator and worker tokens (none on minimal)."""
    kind = request.param
    logs = tmp_path_factory.mktemp(kind)
    if kind == "minimal":
        with deployment("minimal", logs, stage_types={t: 1 for t in STAGE_TYPES}) as d:
            yield d
        return
    # The database server and broker the other tiers use; a database of this module's.
    request.getfixturevalue("postgres_url")
    amqp_url: str = request.getfixturevalue("amqp_url")
    url = f"{POSTGRES_URL}_profile_{uuid.uuid4().hex[:8]}"
    name = url.rpartition("/")[2]
    asyncio.run(_admin(url, f'CREATE DATABASE "{name}"'))
    try:
        with deployment(
            "production",
            logs,
            postgres_url=url,
            amqp_url=amqp_url,
            stage_types={t: 1 for t in STAGE_TYPES},
        ) as d:
            yield d
    finally:
        asyncio.run(_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
