"""The worker template and its rendering.

The template is the repository's worker-boilerplate/, a working worker of its own for
the stage type `tile-render`. The SDK's wheel carries a copy as package data
(jobnik_sdk/_template/, put there by sdk/hatch_build.py); an SDK installed from the
checkout reads worker-boilerplate/ itself. Rendering replaces the template's names
(TEMPLATE_NAMES) with the new worker's, in paths and in text alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ._errors import ScaffoldError
from ._names import TEMPLATE_NAMES, WorkerNames

# What a working copy of the template holds that is not the template (as hatch_build.py
# skips when it bundles it).
_SKIPPED_DIRECTORIES = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "dist", "build"}
)
_SKIPPED_FILES = frozenset({"uv.lock", ".env"})
_SKIPPED_SUFFIXES = (".pyc", ".whl")


def find_template() -> Path:
    """The template's directory: bundled in the installed SDK, or in the checkout the
    SDK runs from."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_template", package.parents[2] / "worker-boilerplate"):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    raise ScaffoldError(
        f"this jobnik-sdk has no worker template ({package / '_template'} is missing): "
        "install the SDK from its wheel, or run from the Jobnik repository"
    )


def template_files(template: Path) -> Iterator[PurePosixPath]:
    """The template's files, relative to its directory."""
    for path in sorted(template.rglob("*")):
        relative = PurePosixPath(path.relative_to(template).as_posix())
        if (
            path.is_file()
            and not _SKIPPED_DIRECTORIES.intersection(relative.parts[:-1])
            and relative.name not in _SKIPPED_FILES
            and not relative.name.endswith(_SKIPPED_SUFFIXES)
        ):
            yield relative


class Renamer:
    """Replaces the template's names with a worker's, longest first and in one pass, so
    that no replacement is itself replaced."""

    def __init__(self, names: WorkerNames) -> None:
        self._to = {
            TEMPLATE_NAMES.package: names.package,
            TEMPLATE_NAMES.project: names.project,
            TEMPLATE_NAMES.stage_type: names.stage_type,
        }
        self._pattern = re.compile("|".join(re.escape(k) for k in sorted(self._to, key=len)[::-1]))

    def __call__(self, text: str) -> str:
        return self._pattern.sub(lambda match: self._to[match.group(0)], text)

    def path(self, relative: PurePosixPath) -> PurePosixPath:
        return PurePosixPath(*(self(part) for part in relative.parts))


# The template's pyproject.toml takes the SDK from the workspace; a project of its own
# takes it from where `jobnik-worker new` was told. This is the block it replaces: the
# comment above the table, the table and its one entry.
_SOURCES_BLOCK = re.compile(
    r"(?:^#[^\n]*\n)*^\[tool\.uv\.sources\]\njobnik-sdk = \{ workspace = true \}\n", re.M
)


def with_sdk_source(pyproject: str, block: str) -> str:
    """The template's pyproject.toml with `block` in place of its workspace source."""
    rendered, count = _SOURCES_BLOCK.subn(lambda _: block, pyproject, count=1)
    if count != 1:
        raise ScaffoldError(
            "the template's pyproject.toml has no '[tool.uv.sources]' table with "
            "'jobnik-sdk = { workspace = true }' to replace"
        )
    return rendered
