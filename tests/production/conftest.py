"""The deployments the tests of this folder run against: the production profile and the
minimal one, each started once per module (`running`), and a production profile of a
module's own for tests that kill its replicas or measure it alone (`own_production`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..support.deployment import Deployment
from ..support.profiles import production, running

__all__ = ["own_production", "running"]


@pytest.fixture(scope="module")
def own_production(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with production(
        request, tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2])
    ) as d:
        yield d
