"""The scaffold's pure parts: the names a stage type gives a worker project, the SDK
sources `--sdk-source` takes and the pyproject.toml tables they become, and the
renaming of the template."""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from jobnik_sdk.scaffold import ScaffoldError, SdkSource, WorkerNames
from jobnik_sdk.scaffold._names import TEMPLATE_NAMES
from jobnik_sdk.scaffold._template import Renamer, with_sdk_source


@pytest.mark.parametrize(
    ("stage_type", "project", "package"),
    [
        ("tile-render", "tile-render-worker", "tile_render_worker"),
        ("publish", "publish-worker", "publish_worker"),
        ("Publish_CDN", "publish-cdn-worker", "publish_cdn_worker"),
        ("geo.v2--export", "geo-v2-export-worker", "geo_v2_export_worker"),
        ("tile-worker", "tile-worker", "tile_worker"),  # not tile-worker-worker
        ("x" * 50, f"{'x' * 50}-worker", f"{'x' * 50}_worker"),
    ],
)
def test_names_follow_the_stage_type(stage_type: str, project: str, package: str) -> None:
    names = WorkerNames.for_stage_type(stage_type)
    assert (names.stage_type, names.project, names.package) == (stage_type, project, package)


def test_two_stage_types_never_share_a_package() -> None:
    types = ["tile-render", "tile-publish", "render", "publish", "Publish_CDN"]
    packages = {WorkerNames.for_stage_type(t).package for t in types}
    assert len(packages) == len(types)


def test_a_name_of_ones_own() -> None:
    names = WorkerNames.for_stage_type("9-patch", project="nine-patch")
    assert (names.project, names.package) == ("nine-patch", "nine_patch")


@pytest.mark.parametrize(
    ("stage_type", "project", "says"),
    [
        ("", None, "1 to 50 letters"),
        ("-render", None, "1 to 50 letters"),
        ("tile render", None, "1 to 50 letters"),
        ("tile/render", None, "1 to 50 letters"),
        ("x" * 51, None, "1 to 50 letters"),
        ("9-patch", None, "does not start with a letter: choose one with --name"),
        ("render", "Render-Worker", "lower-case letters"),
        ("render", "render--worker", "lower-case letters"),
        ("render", "jobnik-sdk", "would shadow a module the worker needs"),
        ("render", "pydantic", "would shadow a module the worker needs"),
        ("render", "json", "would shadow a module the worker needs"),  # the standard library's
        ("render", "tests", "would shadow a module the worker needs"),
    ],
)
def test_names_that_cannot_be_are_refused(stage_type: str, project: str | None, says: str) -> None:
    with pytest.raises(ScaffoldError, match=says):
        WorkerNames.for_stage_type(stage_type, project=project)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("pypi", SdkSource("default-index")),
        (
            "git+https://git.example/org/jobnik",
            SdkSource("git", "https://git.example/org/jobnik", subdirectory="sdk"),
        ),
        (
            "git+https://git.example/org/jobnik@v1.2#subdirectory=packages/sdk",
            SdkSource("git", "https://git.example/org/jobnik", "v1.2", "packages/sdk"),
        ),
        (
            "git+ssh://git@git.example/org/jobnik.git@0f89fab",
            SdkSource("git", "ssh://git@git.example/org/jobnik.git", "0f89fab", "sdk"),
        ),
        ("https://pypi.example/simple", SdkSource("index", "https://pypi.example/simple")),
        (
            "https://files.example/jobnik_sdk-0.1.0-py3-none-any.whl",
            SdkSource("url", "https://files.example/jobnik_sdk-0.1.0-py3-none-any.whl"),
        ),
    ],
)
def test_sdk_sources_by_their_spelling(given: str, expected: SdkSource) -> None:
    assert SdkSource.parse(given) == expected


@pytest.mark.parametrize(
    "given",
    [
        "git+https://git.example/org/jobnik#egg=jobnik-sdk",
        "/no/such/jobnik_sdk-0.1.0-py3-none-any.whl",
        "/no/such/directory",
    ],
)
def test_sdk_sources_that_are_none(given: str) -> None:
    with pytest.raises(ScaffoldError):
        SdkSource.parse(given)


def sources_of(source: SdkSource) -> dict[str, Any]:
    # Sources that put nothing into the project: the directory is never touched.
    block = source.install(Path("/nonexistent"))
    return tomllib.loads(block)["tool"]["uv"] if "[" in block else {}


def test_a_git_source() -> None:
    uv = sources_of(SdkSource("git", "https://git.example/org/jobnik", "v1.2", "sdk"))
    assert uv["sources"]["jobnik-sdk"] == {
        "git": "https://git.example/org/jobnik",
        "subdirectory": "sdk",
        "rev": "v1.2",
    }
    # The protocol, and the manager the project's tests run in-process, from beside it.
    for name, directory in (("jobnik-protocol", "protocol"), ("jobnik-manager", "manager")):
        assert uv["sources"][name] == {
            "git": "https://git.example/org/jobnik",
            "subdirectory": directory,
            "rev": "v1.2",
        }


def test_an_index_of_ones_own_serves_the_sdk_and_what_comes_with_it_alone() -> None:
    uv = sources_of(SdkSource("index", "https://pypi.example/simple"))
    assert uv["index"] == [
        {"name": "jobnik", "url": "https://pypi.example/simple", "explicit": True}
    ]
    assert uv["sources"] == {
        "jobnik-sdk": {"index": "jobnik"},
        "jobnik-protocol": {"index": "jobnik"},
        "jobnik-manager": {"index": "jobnik"},
    }


def test_the_default_index_needs_no_source() -> None:
    assert sources_of(SdkSource("default-index")) == {}


TEMPLATE_PYPROJECT = """\
[project]
name = "tile-render-worker"

[project.scripts]
tile-render-worker = "tile_render_worker.__main__:main"

# Where jobnik-sdk comes from.
# Inside the Jobnik repository: the workspace.
[tool.uv.sources]
jobnik-sdk = { workspace = true }
jobnik-protocol = { workspace = true }
jobnik-manager = { workspace = true }

[tool.pytest.ini_options]
testpaths = ["tests"]
"""


def test_the_workspace_source_and_its_comment_are_replaced() -> None:
    block = SdkSource("git", "https://git.example/org/jobnik").install(Path("/nonexistent"))
    rendered = with_sdk_source(TEMPLATE_PYPROJECT, block)
    assert "workspace" not in rendered
    parsed = tomllib.loads(rendered)
    assert parsed["tool"]["uv"]["sources"] == {
        "jobnik-sdk": {"git": "https://git.example/org/jobnik"},
        "jobnik-protocol": {"git": "https://git.example/org/jobnik", "subdirectory": "protocol"},
        "jobnik-manager": {"git": "https://git.example/org/jobnik", "subdirectory": "manager"},
    }
    assert parsed["tool"]["pytest"]["ini_options"] == {"testpaths": ["tests"]}


def test_a_template_without_the_workspace_source_is_refused() -> None:
    with pytest.raises(ScaffoldError, match="workspace = true"):
        with_sdk_source(TEMPLATE_PYPROJECT.replace("workspace = true", "path = 'x'"), "")


def test_renaming_replaces_each_template_name_once() -> None:
    rename = Renamer(WorkerNames.for_stage_type("tile-render-worker-x"))
    text = (
        'STAGE_TYPE = "tile-render"\n'
        'HANDLER = "tile_render_worker.handler:render_tile"\n'
        "tile-render-worker = 'tile_render_worker.__main__:main'\n"
    )
    assert rename(text) == (
        'STAGE_TYPE = "tile-render-worker-x"\n'
        'HANDLER = "tile_render_worker_x_worker.handler:render_tile"\n'
        "tile-render-worker-x-worker = 'tile_render_worker_x_worker.__main__:main'\n"
    )
    assert rename.path(PurePosixPath("src/tile_render_worker/app.py")) == PurePosixPath(
        "src/tile_render_worker_x_worker/app.py"
    )


def test_the_template_renamed_to_itself_is_unchanged() -> None:
    rename = Renamer(TEMPLATE_NAMES)
    text = "tile-render tile-render-worker tile_render_worker render_tile"
    assert rename(text) == text
