"""`jobnik create FILE`: a job from a JSON (or YAML) body as `POST /v1/jobs` takes it."""

from __future__ import annotations

import importlib
import json as json_module
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .._client import JobnikClient
from .._models import Job
from . import output
from ._run import USAGE, Json, Manager, Token, Url, fail, run


def read_body(path: str) -> dict[str, Any]:
    """The job body in the file (`-`: stdin): JSON, or YAML when PyYAML is installed."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        fail(USAGE, f"cannot read {path}: {exc.strerror or exc}")
    yaml_name = path.lower().endswith((".yaml", ".yml"))
    body: Any
    if not yaml_name:
        try:
            body = json_module.loads(text)
        except ValueError as exc:
            if path != "-":
                fail(USAGE, f"{path} is not JSON: {exc}")
            yaml_name = True  # stdin: perhaps YAML
    if yaml_name:
        try:
            yaml: Any = importlib.import_module("yaml")  # optional, and without type stubs
        except ImportError:
            fail(USAGE, f"{path} is YAML, which needs PyYAML (pip install pyyaml); or use JSON")
        try:
            body = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            fail(USAGE, f"{path} is not valid YAML: {exc}")
    if not isinstance(body, dict):
        fail(USAGE, f"{path} must hold one job: an object with its name, data, stages")
    return body


def create(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="The job as JSON or YAML (`-`: stdin).")
    ],
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """Create a job from a file and print its id (with --json, the job)."""
    body = read_body(file)

    async def work(client: JobnikClient) -> Job:
        return Job.model_validate(await client._http.create("/v1/jobs", body, idempotency_key=None))

    job = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(job)
    else:
        sys.stdout.write(f"{job.id}\n")
