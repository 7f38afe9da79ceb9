"""`jobnik-worker`: the command line of the scaffold."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._errors import ScaffoldError
from ._names import WorkerNames
from ._project import NewProject, new_project
from ._sdk_source import SdkSource


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jobnik-worker", description="Start a Jobnik worker project of its own."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    new = commands.add_parser(
        "new",
        help="write a worker project for one stage type",
        description="Write a worker project for one stage type into DIR: its package and "
        "command named after the stage type, settings, an example handler and its tests, "
        "a Dockerfile, Helm values for the jobnik-worker chart and a README.",
    )
    new.add_argument("directory", type=Path, metavar="DIR", help="where; new or empty")
    new.add_argument("--stage-type", required=True, help="the stage type the worker claims")
    new.add_argument(
        "--name",
        help="the project's name, also its command and image (default: <stage type>-worker)",
    )
    new.add_argument(
        "--sdk-source",
        metavar="SOURCE",
        help="where the project takes jobnik-sdk from: a wheel file (copied into wheels/), "
        "the SDK's source directory (built into a wheel there), git+URL[@rev]"
        "[#subdirectory=sdk], an index URL, or 'pypi'. Default: where this SDK came from",
    )
    new.add_argument(
        "--no-lock", action="store_true", help="do not run `uv lock` in the new project"
    )
    return parser


def _report(project: NewProject) -> str:
    names = project.names
    try:
        where = os.path.relpath(project.directory)
    except ValueError:  # another drive
        where = str(project.directory)
    lines = [
        f"Wrote {names.project} in {where}, a worker for the stage type {names.stage_type!r}:",
        f"  package     src/{names.package}/ (handler.py is yours to write)",
        f"  command     {names.project}",
        f"  jobnik-sdk  from {project.sdk_source.describe()}",
        f"  uv.lock     {'written' if project.locked else 'not yet: run `uv lock` in it'}",
        "Next:",
        f"  cd {where}",
        "  uv run pytest",
        f"  uv run {names.project}          # against http://127.0.0.1:8080 (WORKER_MANAGER_URL)",
        f"  docker build -t {names.project} .",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Run `jobnik-worker` with `argv` (default: the command line)."""
    args = _parser().parse_args(argv)
    try:
        names = WorkerNames.for_stage_type(args.stage_type, project=args.name)
        source = SdkSource.parse(args.sdk_source) if args.sdk_source else None
        project = new_project(args.directory, names, sdk_source=source, lock=not args.no_lock)
    except ScaffoldError as exc:
        print(f"jobnik-worker: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(_report(project))
