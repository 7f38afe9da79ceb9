"""Which route template a path matches: looked up by the path's depth and first
segments, as a scan of every template in order (literal paths first, then the most
specific) would find it."""

from __future__ import annotations

import re

from jobnik_manager.app import create_app
from jobnik_manager.observe.http import RouteTemplates
from jobnik_manager.settings import Settings

ID = "6f1e0c1e-0c1e-4c1e-8c1e-0c1e0c1e0c1e"


def scanned(templates: list[str], path: str) -> tuple[str, dict[str, str]]:
    """The first template, in the lookup's order, that matches all of `path`."""
    for t in sorted(templates, key=lambda t: (t.count("{"), -len(t))):
        names = re.findall(r"\{(\w+)\}", t)
        pattern = re.escape(t)
        for name in names:
            pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>[^/]+)")
        if m := re.fullmatch(pattern, path):
            return t, m.groupdict()
    return "other", {}


def paths_of(template: str) -> list[str]:
    """Paths the template should match, with ids, names that are also literal segments
    elsewhere (`claim`, `tasks`), and some that no template matches."""
    values = [ID, "tiles", "claim", "tasks", "dequeue"]
    filled = [re.sub(r"\{\w+\}", v, template) for v in values]
    return [*filled, template + "/more", template.rsplit("/", 1)[0] + "/x", template + "/"]


def test_every_path_of_the_apps_templates_matches_as_a_scan_of_all_would() -> None:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    templates = list(app.state.route_methods)
    routes = RouteTemplates(templates)
    paths = {p for t in templates for p in paths_of(t)} | {"/", "/v1", "/nowhere/at/all"}
    assert len(templates) > 40
    for path in sorted(paths):
        assert routes.match(path) == scanned(templates, path), path


def test_a_parameter_in_the_first_segments_is_found_beside_the_literal_ones() -> None:
    templates = [
        "/{tenant}/jobs/{jobId}",
        "/{tenant}/jobs/claims",  # ahead of /v1/jobs/{jobId} for /v1/jobs/claims
        "/v1/jobs/{jobId}",
        "/v1/jobs/claim",
        "/{a}/{b}",
        "/v1/{a}",
    ]
    routes = RouteTemplates(templates)
    paths = ["/v1/jobs/claim", "/v1/jobs/claims", f"/v1/jobs/{ID}", f"/acme/jobs/{ID}"]
    for path in [*paths, "/acme/jobs/claims", "/x/y", "/v1/x", "/v1/x/y"]:
        assert routes.match(path) == scanned(templates, path), path
