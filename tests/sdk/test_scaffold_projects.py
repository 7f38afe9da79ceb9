"""`jobnik-worker new` writes projects from the repository's worker-boilerplate/: every
file of the template, renamed after the stage type, with the SDK's source in place; the
projects' own tests pass, and two of them live in one environment. (Built, locked and
run outside the repository in tests/sdk/test_scaffold_outside.py, a slow test.)"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from jobnik_sdk.scaffold import NewProject, ScaffoldError, SdkSource, WorkerNames, main, new_project
from jobnik_sdk.scaffold._names import TEMPLATE_NAMES
from jobnik_sdk.scaffold._template import find_template, template_files

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "worker-boilerplate"
WHEEL_NAME = "jobnik_sdk-0.1.0-py3-none-any.whl"
PROTOCOL_WHEEL_NAME = "jobnik_protocol-0.1.0-py3-none-any.whl"
MANAGER_WHEEL_NAME = "jobnik_manager-0.1.0-py3-none-any.whl"


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    # Copied, never installed: a stand-in is enough to show where it goes.
    path = tmp_path / "dist" / WHEEL_NAME
    path.parent.mkdir()
    path.write_bytes(b"a wheel")
    # The protocol's and the manager's, beside it: the projects' tests run the manager
    # in-process.
    (path.parent / PROTOCOL_WHEEL_NAME).write_bytes(b"the protocol's wheel")
    (path.parent / MANAGER_WHEEL_NAME).write_bytes(b"the manager's wheel")
    return path


def scaffold(directory: Path, stage_type: str, wheel: Path) -> NewProject:
    return new_project(
        directory,
        WorkerNames.for_stage_type(stage_type),
        sdk_source=SdkSource.parse(str(wheel)),
        lock=False,
    )


def test_the_checkout_is_the_template() -> None:
    assert find_template() == TEMPLATE


def test_every_template_file_is_written_renamed(tmp_path: Path, wheel: Path) -> None:
    project = scaffold(tmp_path / "publish", "publish", wheel)
    written = {p.relative_to(project.directory).as_posix() for p in project.files}
    expected = {
        str(f).replace(TEMPLATE_NAMES.package, "publish_worker") for f in template_files(TEMPLATE)
    }
    wheels = {WHEEL_NAME, PROTOCOL_WHEEL_NAME, MANAGER_WHEEL_NAME}
    assert written == expected | {f"wheels/{name}" for name in wheels}
    assert "src/publish_worker/handler.py" in written
    for path in project.files:
        if path.suffix != ".whl":
            text = path.read_text()
            for name in (TEMPLATE_NAMES.stage_type, TEMPLATE_NAMES.package):
                assert name not in text, f"{path}: {name}"
    assert (project.directory / "wheels" / WHEEL_NAME).read_bytes() == b"a wheel"
    assert not project.locked and not (project.directory / "uv.lock").exists()


def test_the_project_names_its_package_command_and_sdk(tmp_path: Path, wheel: Path) -> None:
    directory = scaffold(tmp_path / "cdn", "Publish_CDN", wheel).directory
    pyproject = tomllib.loads((directory / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "publish-cdn-worker"
    assert pyproject["project"]["scripts"] == {
        "publish-cdn-worker": "publish_cdn_worker.__main__:main"
    }
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [
        "src/publish_cdn_worker"
    ]
    assert pyproject["tool"]["uv"]["sources"] == {
        "jobnik-sdk": {"path": f"wheels/{WHEEL_NAME}"},
        "jobnik-protocol": {"path": f"wheels/{PROTOCOL_WHEEL_NAME}"},
        "jobnik-manager": {"path": f"wheels/{MANAGER_WHEEL_NAME}"},
    }
    assert {d.split(">")[0] for d in pyproject["dependency-groups"]["dev"]} == {
        "jobnik-sdk[testing]",
        "jobnik-manager",  # named, so that its source applies
        "pytest",
        "pytest-asyncio",
    }
    settings = (directory / "src" / "publish_cdn_worker" / "settings.py").read_text()
    assert 'STAGE_TYPE = "Publish_CDN"' in settings
    assert 'HANDLER = "publish_cdn_worker.handler:render_tile"' in settings
    dockerfile = (directory / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["publish-cdn-worker"]' in dockerfile
    values = yaml.safe_load((directory / "deploy" / "helm-values.yaml").read_text())
    assert values["stageTypes"][0]["name"] == "Publish_CDN"
    assert values["fullnameOverride"] == "publish-cdn-worker"
    assert values["image"]["repository"] == "registry.example/publish-cdn-worker"


def run_tests(project: Path) -> subprocess.CompletedProcess[str]:
    """The project's tests on this environment's SDK, its package put on the path as
    an install would put it; its own pyproject.toml configures pytest."""
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# The project's own suite, run as a pytest process of its own (each of its tests on a
# manager in-process): room for a busy machine.
@pytest.mark.e2e
@pytest.mark.timeout(150)
@pytest.mark.parametrize("stage_type", ["publish", "Geo.Export_v2"])
def test_the_projects_own_tests_pass(tmp_path: Path, wheel: Path, stage_type: str) -> None:
    directory = scaffold(tmp_path / "project", stage_type, wheel).directory
    done = run_tests(directory)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_two_projects_share_an_environment(tmp_path: Path, wheel: Path) -> None:
    render = scaffold(tmp_path / "render", "render", wheel).directory
    publish = scaffold(tmp_path / "publish", "publish", wheel).directory
    probe = (
        "import render_worker.settings as r, publish_worker.settings as p, "
        "tile_render_worker.settings as t\n"
        "print(r.STAGE_TYPE, r.HANDLER, p.STAGE_TYPE, p.HANDLER, t.STAGE_TYPE)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(render / "src"), str(publish / "src")]),
        },
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == [
        "render",
        "render_worker.handler:render_tile",
        "publish",
        "publish_worker.handler:render_tile",
        "tile-render",
    ]


def test_a_directory_in_use_is_refused(tmp_path: Path, wheel: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="not an empty directory"):
        scaffold(tmp_path / "taken", "publish", wheel)
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


def test_this_sdk_is_the_checkouts_source() -> None:
    # Installed editable from sdk/: a new project gets a wheel built from it.
    assert SdkSource.of_this_sdk() == SdkSource("project", str(ROOT / "sdk"))


def test_the_command(tmp_path: Path, wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "audit"
    main(["new", str(directory), "--stage-type", "audit", "--sdk-source", str(wheel), "--no-lock"])
    said = capsys.readouterr().out
    assert "Wrote audit-worker in" in said and "stage type 'audit'" in said
    assert f"the wheel {wheel}" in said
    assert (directory / "src" / "audit_worker" / "handler.py").is_file()


def test_the_command_says_what_is_wrong(
    tmp_path: Path, wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["new", str(tmp_path / "x"), "--stage-type", "has space", "--sdk-source", str(wheel)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith("jobnik-worker: error: stage type 'has space'")
    assert not (tmp_path / "x").exists()
