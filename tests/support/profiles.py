"""The deployments the end-to-end and slow tiers run against (docs/production.md): the
production profile by default, and the minimal one for the scenarios that run on both.
A folder's conftest imports `running` to offer it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import make_url

from ..conftest import POSTGRES_URL, _admin, database_named, outside_any_loop
from .deployment import Deployment, deployment
from .soak_scenarios import STAGE_TYPES


@contextmanager
def fresh_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of an empty database of its own on the PostgreSQL server the other tiers
    use (skipped, or failed when CI requires it, as they are when it is unreachable),
    dropped afterwards."""
    request.getfixturevalue("postgres_url")
    name = f"{make_url(POSTGRES_URL).database}_profile_{uuid.uuid4().hex[:8]}"
    url = database_named(POSTGRES_URL, name)
    outside_any_loop(_admin(url, f'CREATE DATABASE "{name}"'))
    try:
        yield url
    finally:
        outside_any_loop(_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def production(request: pytest.FixtureRequest, logs: Path, **options: Any) -> Iterator[Deployment]:
    """The production profile on a database of its own and the broker the other tiers
    use; `options` as `deployment` takes them."""
    amqp_url: str = request.getfixturevalue("amqp_url")
    with (
        fresh_database(request) as url,
        deployment("production", logs, postgres_url=url, amqp_url=amqp_url, **options) as d,
    ):
        yield d


@pytest.fixture(scope="module", params=["production", "minimal"])
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """A deployment with one template worker per stage type of the scenarios, handing
    out its producer, operator and worker tokens (none on minimal)."""
    kind = request.param
    logs = tmp_path_factory.mktemp(kind)
    workers = {t: 1 for t in STAGE_TYPES}
    if kind == "minimal":
        with deployment("minimal", logs, stage_types=workers) as d:
            yield d
    else:
        with production(request, logs, stage_types=workers) as d:
            yield d
