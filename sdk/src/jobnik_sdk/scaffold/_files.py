"""Which files of a working copy of the worker template are the template.

Standard library only: sdk/hatch_build.py loads this file by its path when it bundles
the template into the wheel, before the SDK (or anything it needs) is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

# What a working copy holds that is not the template: caches, builds, a lock, secrets.
SKIPPED_DIRECTORIES = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "dist", "build"}
)
SKIPPED_FILES = frozenset({"uv.lock", ".env"})
SKIPPED_SUFFIXES = (".pyc", ".whl")


def template_files(template: Path) -> Iterator[PurePosixPath]:
    """The template's files, relative to its directory."""
    for path in sorted(template.rglob("*")):
        relative = PurePosixPath(path.relative_to(template).as_posix())
        if (
            path.is_file()
            and not SKIPPED_DIRECTORIES.intersection(relative.parts[:-1])
            and relative.name not in SKIPPED_FILES
            and not relative.name.endswith(SKIPPED_SUFFIXES)
        ):
            yield relative
