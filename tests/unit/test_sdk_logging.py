"""A client keeps httpx's per-request INFO lines out of an application's log, unless the
application chose httpx's level itself."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from jobnik_sdk import JobnikClient


@pytest.fixture
def httpx_log() -> Iterator[logging.Logger]:
    log = logging.getLogger("httpx")
    before = log.level
    yield log
    log.setLevel(before)


async def test_httpx_request_lines_are_kept_below_info(httpx_log: logging.Logger) -> None:
    httpx_log.setLevel(logging.NOTSET)
    async with JobnikClient("http://127.0.0.1:1"):
        assert not httpx_log.isEnabledFor(logging.INFO)


async def test_a_level_the_application_chose_is_left_alone(httpx_log: logging.Logger) -> None:
    httpx_log.setLevel(logging.DEBUG)
    async with JobnikClient("http://127.0.0.1:1"):
        assert httpx_log.level == logging.DEBUG
