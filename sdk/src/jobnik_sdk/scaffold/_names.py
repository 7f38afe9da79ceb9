"""The names a worker project takes from its stage type."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ._errors import ScaffoldError

# The manager takes any stage type of up to 50 characters; a scaffolded project takes
# the ones that are also safe as names of files, packages, Kubernetes objects and
# literals in Python and YAML.
_STAGE_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,49}")
_PROJECT_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

# Import names a worker's package must not take: it would shadow, or be shadowed by,
# what the worker itself imports.
_TAKEN = frozenset(
    {
        "jobnik_sdk",
        "jobnik_manager",
        "pydantic",
        "pydantic_settings",
        "httpx",
        "aio_pika",
        "tenacity",
        "sniffio",
        "pytest",
        "pytest_asyncio",
        "tests",
    }
)


@dataclass(frozen=True)
class WorkerNames:
    """What a worker project is called: the stage type it claims, its project (also its
    console script and image name) and its import package."""

    stage_type: str
    project: str
    package: str

    @classmethod
    def for_stage_type(cls, stage_type: str, *, project: str | None = None) -> WorkerNames:
        """The names of the worker of `stage_type`: `tile-render` gives the project and
        script `tile-render-worker` and the package `tile_render_worker`. `project`
        replaces the derived project name."""
        if not _STAGE_TYPE.fullmatch(stage_type):
            raise ScaffoldError(
                f"stage type {stage_type!r}: use 1 to 50 letters, digits, '-', '_' or '.', "
                "starting with a letter or digit"
            )
        if project is None:
            slug = re.sub(r"[^a-z0-9]+", "-", stage_type.lower()).strip("-")
            project = slug if slug.endswith("-worker") else f"{slug}-worker"
            if not _PROJECT_NAME.fullmatch(project):
                raise ScaffoldError(
                    f"stage type {stage_type!r} gives the project name {project!r}, which "
                    "does not start with a letter: choose one with --name"
                )
        elif not _PROJECT_NAME.fullmatch(project):
            raise ScaffoldError(
                f"project name {project!r}: use lower-case letters, digits and single '-', "
                "starting with a letter (e.g. tile-render-worker)"
            )
        package = project.replace("-", "_")
        if package in _TAKEN or package in sys.stdlib_module_names:
            raise ScaffoldError(
                f"the package {package!r} would shadow a module the worker needs: choose "
                "another name with --name"
            )
        return cls(stage_type=stage_type, project=project, package=package)


# The names worker-boilerplate/ itself uses; rendering a project replaces them.
TEMPLATE_NAMES = WorkerNames(
    stage_type="tile-render", project="tile-render-worker", package="tile_render_worker"
)
