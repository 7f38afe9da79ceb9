"""The dashboard's files: served from the package at /ui without a token (they hold no
data; the page's API calls carry one), and nothing in them reaches beyond the manager."""

from __future__ import annotations

import re

import httpx
import pytest

from jobnik_manager.api.routes.ui import UI_DIR
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

from ..support.apps import app_on


@pytest.mark.parametrize("auth", ["off", "on"])
async def test_the_dashboard_is_served_without_a_token(db: Database, auth: str) -> None:
    with app_on(db, Settings(database_url=db.url, auth=auth)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://m") as http:
            for path in ("/ui", "/ui/"):
                page = await http.get(path)
                assert page.status_code == 200, page.text
                assert page.headers["content-type"].startswith("text/html")
                assert "/ui/assets/app.js" in page.text
            script = await http.get("/ui/assets/app.js")
            assert script.status_code == 200
            assert "javascript" in script.headers["content-type"]
            sheet = await http.get("/ui/assets/app.css")
            assert (sheet.status_code, sheet.headers["content-type"][:8]) == (200, "text/css")
            assert (await http.get("/ui/assets/nothing.js")).status_code == 404
            assert 'href="/ui"' in (await http.get("/")).text
            if auth == "on":  # the data itself still needs the token
                assert (await http.get("/v1/jobs")).status_code == 401


def test_the_files_load_nothing_from_elsewhere() -> None:
    names = sorted(p.name for p in UI_DIR.iterdir() if p.is_file())
    assert names == ["app.css", "app.js", "index.html"]
    for path in UI_DIR.iterdir():
        # SVG's namespace is a name in the form of a URL, never fetched.
        text = path.read_text().replace('"http://www.w3.org/2000/svg"', "")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text, re.I), path.name
        assert "@import" not in text and "@font-face" not in text, path.name
