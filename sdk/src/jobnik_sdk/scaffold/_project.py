"""Writing a new worker project: the template rendered for one stage type, the SDK
source put in place, and the lock file."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ._errors import ScaffoldError
from ._names import WorkerNames
from ._sdk_source import SdkSource, uv_command
from ._template import Renamer, find_template, template_files, with_sdk_source


@dataclass(frozen=True)
class NewProject:
    """What `new_project` wrote."""

    directory: Path
    names: WorkerNames
    sdk_source: SdkSource
    files: tuple[Path, ...]
    locked: bool


def new_project(
    directory: Path,
    names: WorkerNames,
    *,
    sdk_source: SdkSource | None = None,
    lock: bool = True,
) -> NewProject:
    """Write a worker project for `names.stage_type` into `directory`, which must not
    exist or be empty. `sdk_source` defaults to where this SDK came from. With `lock`,
    runs `uv lock` in it (when uv is there), so that it builds with `uv sync --locked`.
    """
    directory = directory.expanduser().resolve()
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ScaffoldError(f"{directory} exists and is not an empty directory")
    source = sdk_source or SdkSource.of_this_sdk()
    template = find_template()
    rename = Renamer(names)

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for relative in template_files(template):
        text = rename((template / relative).read_text(encoding="utf-8"))
        target = directory / rename.path(relative)
        if relative.as_posix() == "pyproject.toml":
            text = with_sdk_source(text, source.install(directory))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    written.extend(sorted((directory / "wheels").glob("*.whl")))

    locked = False
    if lock and (uv := uv_command()) is not None:
        done = subprocess.run([*uv, "lock"], cwd=directory, capture_output=True, text=True)
        if done.returncode != 0:
            raise ScaffoldError(f"`uv lock` failed in {directory}:\n{done.stderr}")
        locked = True
        written.append(directory / "uv.lock")
    return NewProject(directory, names, source, tuple(written), locked)
