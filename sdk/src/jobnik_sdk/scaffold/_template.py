"""The worker template and its rendering.

The template is the repository's worker-boilerplate/, a working worker of its own for
the stage type `tile-render`. The SDK's wheel carries a copy as package data
(jobnik_sdk/_template/, put there by sdk/hatch_build.py); an SDK installed from the
checkout reads worker-boilerplate/ itself. Rendering replaces the template's names
(TEMPLATE_NAMES) with the new worker's, in paths and in text alike.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ._errors import ScaffoldError
from ._files import template_files as template_files  # where the template is read
from ._names import TEMPLATE_NAMES, WorkerNames


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


# The template's pyproject.toml takes the SDK (with the protocol, and the manager for its
# tests) from the workspace; a project of its own takes them from where `jobnik-worker new`
# was told.
# This is the block it replaces: the comment above the table, the table and its entries.
_SOURCES_BLOCK = re.compile(
    r"(?:^#[^\n]*\n)*^\[tool\.uv\.sources\]\njobnik-sdk = \{ workspace = true \}\n"
    r"(?:jobnik-(?:protocol|manager) = \{ workspace = true \}\n)*",
    re.M,
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
