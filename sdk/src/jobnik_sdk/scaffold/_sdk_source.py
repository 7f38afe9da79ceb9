"""Where a new worker project takes jobnik-sdk from.

`--sdk-source` names it: a wheel file (copied into the project's wheels/), the SDK's
source directory (built into a wheel there), a git URL (`git+https://...[@rev]
[#subdirectory=sdk]`), the URL of a package index of your own (`https://.../simple`),
or `pypi` for whatever index the project resolves from by default. Without it, the new
project takes the SDK from where this one came from (`SdkSource.of_this_sdk`).

The SDK needs jobnik-protocol (the API's vocabulary, which the manager shares), and the
project's tests need the manager (`jobnik-sdk[testing]`: FakeJobnik serves it
in-process); both come from the same place as the SDK: their wheels beside the SDK's
(their source directories beside the SDK's), the same git repository, the same index.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from ._errors import ScaffoldError

Kind = Literal["wheel", "project", "git", "index", "url", "default-index"]

WHEELS = "wheels"
# What a project takes from the SDK's source, each with the directory of its sources in
# the repository (beside the SDK's) and why: the SDK first.
PACKAGES = (
    ("jobnik-sdk", "sdk", "the SDK"),
    ("jobnik-protocol", "protocol", "the SDK's vocabulary, shared with the manager"),
    ("jobnik-manager", "manager", "the manager, which the tests run in-process"),
)


@dataclass(frozen=True)
class SdkSource:
    """A source of jobnik-sdk for a new project (see the module's docstring)."""

    kind: Kind
    location: str = ""
    rev: str | None = None
    subdirectory: str | None = None

    @classmethod
    def parse(cls, text: str) -> SdkSource:
        """The source `--sdk-source` names."""
        if text in ("pypi", "default"):
            return cls("default-index")
        if text.startswith("git+"):
            url, _, fragment = text[len("git+") :].partition("#")
            subdirectory = "sdk"
            for part in filter(None, fragment.split("&")):
                key, _, value = part.partition("=")
                if key != "subdirectory" or not value:
                    raise ScaffoldError(f"{text!r}: only '#subdirectory=...' may follow the URL")
                subdirectory = value
            scheme, netloc, path, query, _ = urlsplit(url)
            rev = None
            if "@" in path:
                path, _, rev = path.rpartition("@")
            base = f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")
            return cls("git", base, rev=rev or None, subdirectory=subdirectory)
        if text.startswith(("http://", "https://")):
            kind: Kind = "url" if text.endswith(".whl") else "index"
            return cls(kind, text)
        given = Path(text).expanduser().resolve()
        if given.is_file() and given.suffix == ".whl":
            return cls("wheel", str(given))
        if (given / "pyproject.toml").is_file():
            return cls("project", str(given))
        raise ScaffoldError(
            f"--sdk-source {text!r} is no jobnik-sdk wheel file, SDK source directory, "
            "git+ URL, index URL, nor 'pypi'"
        )

    @classmethod
    def of_this_sdk(cls) -> SdkSource:
        """Where the running jobnik-sdk was installed from, as its installer recorded it
        (PEP 610's direct_url.json): its wheel file, its source directory, its git
        commit or URL; or, with no such record, a package index."""
        try:
            recorded = importlib.metadata.distribution("jobnik-sdk").read_text("direct_url.json")
        except importlib.metadata.PackageNotFoundError:
            recorded = None
        if not recorded:
            return cls("default-index")
        origin = json.loads(recorded)
        url: str = origin["url"]
        if "vcs_info" in origin:
            vcs = origin["vcs_info"]
            return cls(
                "git",
                url,
                rev=vcs.get("commit_id") or vcs.get("requested_revision"),
                subdirectory=origin.get("subdirectory"),
            )
        if url.startswith("file:"):
            path = Path(url2pathname(unquote(urlsplit(url).path)))
            if "dir_info" in origin:
                return cls("project", str(path))
            if path.is_file() and path.suffix == ".whl":
                return cls("wheel", str(path))
            raise ScaffoldError(
                f"this jobnik-sdk was installed from {path}, which is no longer there: "
                "name a wheel with --sdk-source"
            )
        return cls("url", url)

    def describe(self) -> str:
        """One line for the user: where the SDK will come from."""
        return {
            "wheel": f"the wheel {self.location}",
            "project": f"a wheel built from {self.location}",
            "git": f"git {self.location}" + (f" at {self.rev}" if self.rev else ""),
            "index": f"the index {self.location}",
            "url": self.location,
            "default-index": "the project's default package index",
        }[self.kind]

    def install(self, project: Path) -> str:
        """Put what the source needs into `project` (wheels into wheels/) and return the
        pyproject.toml block that points jobnik-sdk (and the packages that come with it,
        `PACKAGES`) at it."""
        if self.kind in ("wheel", "project"):
            wheels = self._wheels_into(project / WHEELS)
            return _block(
                "wheels in wheels/ (the manager's for the tests alone), committed with\n"
                "# the project; to upgrade, put the new wheels there, name them here and run\n"
                "# `uv lock`",
                *(f'{name} = {{ path = "{WHEELS}/{wheel.name}" }}' for name, wheel in wheels),
            )
        if self.kind == "git":
            entries = []
            for name, directory, _ in PACKAGES:
                fields = [f'git = "{self.location}"']
                subdirectory = _beside(self.subdirectory, directory)
                if subdirectory:
                    fields.append(f'subdirectory = "{subdirectory}"')
                if self.rev:
                    fields.append(f'rev = "{self.rev}"')
                entries.append(f"{name} = {{ {', '.join(fields)} }}")
            return _block(
                "its git repository (the Dockerfile's build stage then needs git)", *entries
            )
        if self.kind == "url":
            head, _, wheel = self.location.rpartition("/")
            return _block(
                "wheels at URLs (the others published beside the SDK's)",
                *(
                    f'{name} = {{ url = "{head}/{_wheel_of(name, wheel)}" }}'
                    for name, _, _ in PACKAGES
                ),
            )
        if self.kind == "index":
            by_index = "".join(f'{name} = {{ index = "jobnik" }}\n' for name, _, _ in PACKAGES)
            return (
                "# Where jobnik-sdk comes from: a package index of its own; everything else\n"
                "# comes from the default index.\n"
                "[[tool.uv.index]]\n"
                'name = "jobnik"\n'
                f'url = "{self.location}"\n'
                "explicit = true\n"
                "\n"
                "[tool.uv.sources]\n" + by_index
            )
        return (
            "# jobnik-sdk (with jobnik-protocol, and jobnik-manager for the tests) comes from\n"
            "# the default package index, like every other dependency.\n"
        )

    def _wheels_into(self, wheels: Path) -> list[tuple[str, Path]]:
        """The wheels of `PACKAGES`, copied (or built) into `wheels`, by name."""
        wheels.mkdir(parents=True, exist_ok=True)
        found: list[tuple[str, Path]] = []
        if self.kind == "wheel":
            sdk = Path(self.location)
            for name, _, why in PACKAGES:
                beside = sorted(sdk.parent.glob(_wheel_of(name, sdk.name, any_tag=True)))
                if not beside:
                    raise ScaffoldError(
                        f"no {_wheel_of(name, sdk.name, any_tag=True)} beside {sdk}: a project "
                        f"needs {why}; build it with `uv build --package {name}` and put it there"
                    )
                found.append((name, Path(shutil.copy2(beside[-1], wheels))))
            return found
        sdk_source = Path(self.location)
        for name, directory, why in PACKAGES:
            source = sdk_source if name == "jobnik-sdk" else sdk_source.parent / directory
            if not (source / "pyproject.toml").is_file():
                raise ScaffoldError(
                    f"no {directory}/ source directory beside {sdk_source}: a project needs "
                    f"{why}; name the SDK's wheel with --sdk-source, with the others beside it"
                )
            found.append((name, _built_into(source, wheels)))
        return found


def _wheel_of(name: str, sdk_wheel: str, *, any_tag: bool = False) -> str:
    """The file name of `name`'s wheel of the same version as the SDK's wheel (a glob of
    any build tags when `any_tag`)."""
    version = sdk_wheel.split("-")[1]
    rest = "*.whl" if any_tag else sdk_wheel.split("-", 2)[2]
    return f"{name.replace('-', '_')}-{version}-{rest}"


def _built_into(source: Path, wheels: Path) -> Path:
    with tempfile.TemporaryDirectory() as out:
        _build_wheel(source, Path(out))
        [built] = Path(out).glob("*.whl")
        return Path(shutil.copy2(built, wheels))


def _beside(sdk_subdirectory: str | None, directory: str) -> str | None:
    """The subdirectory of `directory` in a repository where the SDK is at
    `sdk_subdirectory` (none: the SDK at the root, the others then nowhere named)."""
    if directory == "sdk":
        return sdk_subdirectory
    parent = PurePosixPath(sdk_subdirectory).parent if sdk_subdirectory else PurePosixPath()
    return str(parent / directory)


def _block(what: str, *entries: str) -> str:
    lines = "".join(f"{entry}\n" for entry in entries)
    return f"# Where jobnik-sdk comes from: {what}.\n[tool.uv.sources]\n{lines}"


def _build_wheel(source: Path, out: Path) -> None:
    uv = uv_command()
    if uv is None:
        raise ScaffoldError(
            f"building the SDK's wheel from {source} needs uv (https://docs.astral.sh/uv/): "
            "install it, or name a jobnik-sdk wheel with --sdk-source"
        )
    done = subprocess.run(
        [*uv, "build", "--wheel", "--out-dir", str(out), str(source)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise ScaffoldError(f"building the SDK's wheel from {source} failed:\n{done.stderr}")


def uv_command() -> list[str] | None:
    """How to run uv here: the one running this program (`uv run` says which in `UV`),
    on PATH, or as the `uv` package of this interpreter."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return [found]
    try:
        importlib.metadata.distribution("uv")
    except importlib.metadata.PackageNotFoundError:
        return None
    return [sys.executable, "-m", "uv"]
