"""/docs and /redoc draw in a browser with nothing but the manager to reach."""

from __future__ import annotations

import pytest

from ..support.deployment import Deployment

pytestmark = pytest.mark.e2e


def test_swagger_ui_draws_the_operations_offline(page, dashboard: Deployment) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{dashboard.url}/docs")
    operations = page.locator(".opblock", has_text="/v1/jobs")
    operations.first.wait_for(timeout=15_000)
    assert operations.count() >= 2  # GET and POST /v1/jobs at least


# ReDoc's bundle links its "powered by" logo from its CDN: an image, aborted, and nothing
# it needs. No script, style sheet or font comes from elsewhere.
@pytest.mark.offsite("image")
def test_redoc_draws_its_menu_offline(page, dashboard: Deployment) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{dashboard.url}/redoc")
    menu = page.locator("[role=menuitem], .menu-content li")
    menu.first.wait_for(timeout=15_000)
    assert menu.count() > 3
