"""The SDK's public face: `__all__` lists exactly the public names, each documented,
and the SDK never imports the manager."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

import jobnik_sdk
import jobnik_sdk.testing


def _public(module: ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }


@pytest.mark.parametrize("module", [jobnik_sdk, jobnik_sdk.testing], ids=lambda m: m.__name__)
def test_all_lists_the_public_names(module: ModuleType) -> None:
    listed = {name for name in module.__all__ if not name.startswith("__")}
    assert listed == _public(module)
    assert len(module.__all__) == len(set(module.__all__))


@pytest.mark.parametrize("module", [jobnik_sdk, jobnik_sdk.testing], ids=lambda m: m.__name__)
def test_every_public_name_has_a_docstring(module: ModuleType) -> None:
    undocumented = [
        name
        for name in module.__all__
        if not name.startswith("__") and not (getattr(module, name).__doc__ or "").strip()
    ]
    assert undocumented == []
    assert (module.__doc__ or "").strip()


def test_public_methods_are_documented() -> None:
    for name in jobnik_sdk.__all__:
        obj = getattr(jobnik_sdk, name)
        if not isinstance(obj, type):
            continue
        for attr in dir(obj):
            value = getattr(obj, attr)
            if attr.startswith("_") or not callable(value):
                continue
            if not (getattr(value, "__module__", None) or "").startswith("jobnik_sdk"):
                continue  # inherited from pydantic, enum, ...
            assert (value.__doc__ or "").strip(), f"{name}.{attr} has no docstring"


def test_the_sdk_does_not_import_the_manager() -> None:
    # jobnik_sdk.testing does (it serves the manager in-process, from the `testing`
    # extra); the SDK itself, its command line and its scaffold never.
    code = (
        "import sys, jobnik_sdk, jobnik_sdk.cli, jobnik_sdk.scaffold; "
        "print(sorted({m.partition('.')[0] for m in sys.modules} & "
        "{'jobnik_manager', 'fastapi', 'sqlalchemy'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_package_is_typed() -> None:
    from importlib.resources import files

    assert files("jobnik_sdk").joinpath("py.typed").is_file()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Heartbeat", "HeartbeatAnswer"),
        ("RetryPolicy", "RequestRetryPolicy"),
        ("TransportError", "JobnikTransportError"),
        ("ValidationError", "JobnikValidationError"),
    ],
)
def test_renamed_classes_answer_to_their_old_names_with_a_warning(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"use jobnik_sdk.{new}"):
        assert getattr(jobnik_sdk, old) is getattr(jobnik_sdk, new)
    with pytest.warns(DeprecationWarning):
        exec(f"from jobnik_sdk import {old}", {})
    assert old not in jobnik_sdk.__all__
    with pytest.raises(AttributeError):
        _ = jobnik_sdk.NoSuchName  # type: ignore[attr-defined]
