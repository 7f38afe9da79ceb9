"""Build hook: bundles the worker template (the repository's worker-boilerplate/) into
the SDK, so that `jobnik-worker new` renders new worker projects from the wheel alone.

The wheel holds it as package data under jobnik_sdk/_template/ and the sdist under
worker-template/ (a wheel built from that sdist takes it from there). An editable
install bundles nothing: the scaffold reads the template from the checkout.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# What a working copy of the template holds that is not the template.
SKIPPED_DIRECTORIES = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "dist", "build"}
)
SKIPPED_FILES = frozenset({"uv.lock", ".env"})
SKIPPED_SUFFIXES = (".pyc", ".whl")


def template_files(source: Path) -> list[PurePosixPath]:
    """The template's files, relative to `source`."""
    files = []
    for path in sorted(source.rglob("*")):
        relative = PurePosixPath(path.relative_to(source).as_posix())
        if (
            path.is_file()
            and not SKIPPED_DIRECTORIES.intersection(relative.parts[:-1])
            and relative.name not in SKIPPED_FILES
            and not relative.name.endswith(SKIPPED_SUFFIXES)
        ):
            files.append(relative)
    return files


class WorkerTemplateHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        bundled = root / "worker-template"  # in an unpacked sdist
        checkout = root.parent / "worker-boilerplate"  # in the repository
        source = bundled if (bundled / "pyproject.toml").is_file() else checkout
        if not (source / "pyproject.toml").is_file():
            raise RuntimeError(
                f"the worker template is in neither {bundled} nor {checkout}: build the "
                "SDK from the Jobnik repository (sdk/) or from its sdist"
            )
        if self.target_name == "sdist" and source == bundled:
            return  # already part of the sdist's files
        target = "jobnik_sdk/_template" if self.target_name == "wheel" else "worker-template"
        for relative in template_files(source):
            build_data["force_include"][str(source / relative)] = f"{target}/{relative}"
