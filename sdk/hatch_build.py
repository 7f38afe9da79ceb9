"""Build hook: bundles the worker template (the repository's worker-boilerplate/) into
the SDK, so that `jobnik-worker new` renders new worker projects from the wheel alone.

The wheel holds it as package data under jobnik_sdk/_template/ and the sdist under
worker-template/ (a wheel built from that sdist takes it from there). An editable
install bundles nothing: the scaffold reads the template from the checkout.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _template_files_rule() -> Callable[[Path], Iterable[PurePosixPath]]:
    """`template_files` of jobnik_sdk/scaffold/_files.py, loaded by its path: the SDK is
    not installed while it builds, and the scaffold must pick the same files."""
    path = Path(__file__).parent / "src" / "jobnik_sdk" / "scaffold" / "_files.py"
    spec = importlib.util.spec_from_file_location("_jobnik_template_files", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rule: Callable[[Path], Iterable[PurePosixPath]] = module.template_files
    return rule


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
        for relative in _template_files_rule()(source):
            build_data["force_include"][str(source / relative)] = f"{target}/{relative}"
