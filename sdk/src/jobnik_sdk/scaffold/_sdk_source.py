"""Where a new worker project takes jobnik-sdk from.

`--sdk-source` names it: a wheel file (copied into the project's wheels/), the SDK's
source directory (built into a wheel there), a git URL (`git+https://...[@rev]
[#subdirectory=sdk]`), the URL of a package index of your own (`https://.../simple`),
or `pypi` for whatever index the project resolves from by default. Without it, the new
project takes the SDK from where this one came from (`SdkSource.of_this_sdk`).

The project's tests need the manager too (`jobnik-sdk[testing]`: FakeJobnik serves it
in-process), from the same place: the jobnik-manager wheel beside the SDK's (its source
directory beside the SDK's), the same git repository, the same index.
"""

from __future__ import annotations

import importlib.metadata
import json
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
        """Put what the source needs into `project` (a wheel into wheels/) and return the
        pyproject.toml block that points jobnik-sdk at it."""
        if self.kind in ("wheel", "project"):
            wheel, manager = self._wheels_into(project / WHEELS)
            return _block(
                "wheels in wheels/ (the manager's for the tests alone), committed with\n"
                "# the project; to upgrade, put the new wheels there, name them here and run\n"
                "# `uv lock`",
                f'jobnik-sdk = {{ path = "{WHEELS}/{wheel.name}" }}',
                f'jobnik-manager = {{ path = "{WHEELS}/{manager.name}" }}',
            )
        if self.kind == "git":
            entries = []
            for name, subdirectory in (
                ("jobnik-sdk", self.subdirectory),
                ("jobnik-manager", _beside(self.subdirectory)),
            ):
                fields = [f'git = "{self.location}"']
                if subdirectory:
                    fields.append(f'subdirectory = "{subdirectory}"')
                if self.rev:
                    fields.append(f'rev = "{self.rev}"')
                entries.append(f"{name} = {{ {', '.join(fields)} }}")
            return _block(
                "its git repository (the Dockerfile's build stage then needs git)", *entries
            )
        if self.kind == "url":
            head, _, name = self.location.rpartition("/")
            beside = f"{head}/{name.replace('jobnik_sdk-', 'jobnik_manager-', 1)}"
            return _block(
                "wheels at URLs (the manager's, published beside the SDK's, for the tests)",
                f'jobnik-sdk = {{ url = "{self.location}" }}',
                f'jobnik-manager = {{ url = "{beside}" }}',
            )
        if self.kind == "index":
            return (
                "# Where jobnik-sdk comes from: a package index of its own; everything else\n"
                "# comes from the default index.\n"
                "[[tool.uv.index]]\n"
                'name = "jobnik"\n'
                f'url = "{self.location}"\n'
                "explicit = true\n"
                "\n"
                "[tool.uv.sources]\n"
                'jobnik-sdk = { index = "jobnik" }\n'
                'jobnik-manager = { index = "jobnik" }\n'
            )
        return (
            "# jobnik-sdk (and jobnik-manager, for the tests) come from the default package\n"
            "# index, like every other dependency.\n"
        )

    def _wheels_into(self, wheels: Path) -> tuple[Path, Path]:
        """The SDK's wheel and the manager's, copied (or built) into `wheels`."""
        wheels.mkdir(parents=True, exist_ok=True)
        if self.kind == "wheel":
            sdk = Path(self.location)
            version = sdk.name.split("-")[1]
            beside = sorted(sdk.parent.glob(f"jobnik_manager-{version}-*.whl"))
            if not beside:
                raise ScaffoldError(
                    f"no jobnik_manager-{version}-*.whl beside {sdk}: a project's tests run "
                    "the manager in-process (jobnik-sdk[testing]); build it with "
                    "`uv build --package jobnik-manager` and put it there"
                )
            return Path(shutil.copy2(sdk, wheels)), Path(shutil.copy2(beside[-1], wheels))
        source = Path(self.location)
        manager = source.parent / "manager"
        if not (manager / "pyproject.toml").is_file():
            raise ScaffoldError(
                f"no manager source directory beside {source}: a project's tests run the "
                "manager in-process (jobnik-sdk[testing]); name a wheel with --sdk-source"
            )
        return _built_into(source, wheels), _built_into(manager, wheels)


def _built_into(source: Path, wheels: Path) -> Path:
    with tempfile.TemporaryDirectory() as out:
        _build_wheel(source, Path(out))
        [built] = Path(out).glob("*.whl")
        return Path(shutil.copy2(built, wheels))


def _beside(subdirectory: str | None) -> str:
    """The manager's subdirectory in a repository where the SDK is at `subdirectory`."""
    return str(PurePosixPath(subdirectory).parent / "manager") if subdirectory else "manager"


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
    """How to run uv here: on PATH, or as the `uv` package of this interpreter."""
    found = shutil.which("uv")
    if found:
        return [found]
    try:
        importlib.metadata.distribution("uv")
    except importlib.metadata.PackageNotFoundError:
        return None
    return [sys.executable, "-m", "uv"]
