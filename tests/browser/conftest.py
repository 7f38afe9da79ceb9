"""Headless Chromium for the browser tests: Debian's own (/usr/bin/chromium), driven by
Playwright, with every request to a host other than 127.0.0.1 aborted, so that a page
that reaches for a CDN or a web font shows it by failing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ..support.deployment import Deployment
from ..support.profiles import production

CHROMIUM = Path(os.environ.get("JOBNIK_TEST_CHROMIUM", "/usr/bin/chromium"))
# CI sets this so that a missing browser fails the run instead of skipping.
REQUIRE_BROWSER = os.environ.get("JOBNIK_TEST_REQUIRE_BROWSER", "") not in ("", "0", "false")
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Nothing of its own reaching out: on a closed network those calls only hang.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
        if REQUIRE_BROWSER:
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Offsite:
    """The requests a page made to hosts other than 127.0.0.1 (each aborted)."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.kinds: list[str] = []  # each one's resource type: script, font, image, ...

    def route(self, route) -> None:  # type: ignore[no-untyped-def]
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.urls.append(url)
            self.kinds.append(route.request.resource_type)
            route.abort()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A fresh page (its own context) that may reach 127.0.0.1 only; `page.offsite`
    lists what it tried elsewhere. A test passes only if it tried nothing elsewhere, but
    the resource types its `offsite` mark names (`@pytest.mark.offsite("image")`)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    offsite = Offsite()
    context.route("**/*", offsite.route)
    page = context.new_page()
    page.offsite = offsite
    try:
        yield page
    finally:
        context.close()
    mark = request.node.get_closest_marker("offsite")
    allowed = set(mark.args) if mark else set()
    assert set(offsite.kinds) <= allowed, f"reached beyond 127.0.0.1: {offsite.urls}"


@pytest.fixture(scope="module")
def dashboard(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """The production profile (two replicas behind one URL, PostgreSQL, auth on) whose
    pages the tests open, signed in as its operator (`signed_in`)."""
    # Workers drop out of the workers view within seconds of their last claim, not a
    # minute: long enough for one that claims every 5 s (its safety poll, and each
    # replica records a worker at most every 5 s).
    window = {"JOBNIK_WORKERS_WINDOW": "15"}
    with production(request, tmp_path_factory.mktemp("dashboard"), manager_env=window) as d:
        yield d


@pytest.fixture
def signed_in(page, dashboard: Deployment):  # type: ignore[no-untyped-def]
    """The page with the operator's token in the tab, as the token dialog leaves it."""
    token = json.dumps(dashboard.token("operator"))
    page.context.add_init_script(f"sessionStorage.setItem('jobnik.token', {token})")
    return page
