"""Where a new worker project takes jobnik-sdk from.

`--sdk-source` names it: a wheel file (copied into the project's wheels/), the SDK's
source directory (built into a wheel there), a git URL (`git+https://...[@rev]
[#subdirectory=sdk]`), the URL of a package index of your own (`https://.../simple`),
or `pypi` for whatever index the project resolves from by default. Without it, the new
project takes the SDK from where this one came from (`SdkSource.of_this_sdk`).
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
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
            wheel = self._wheel_into(project / WHEELS)
            return _block(
                "a wheel in wheels/, committed with the project; to upgrade, put the new\n"
                "# wheel there, name it here and run `uv lock`",
                f'jobnik-sdk = {{ path = "{WHEELS}/{wheel.name}" }}',
            )
        if self.kind == "git":
            fields = [f'git = "{self.location}"']
            if self.subdirectory:
                fields.append(f'subdirectory = "{self.subdirectory}"')
            if self.rev:
                fields.append(f'rev = "{self.rev}"')
            return _block(
                "its git repository (the Dockerfile's build stage then needs git)",
                f"jobnik-sdk = {{ {', '.join(fields)} }}",
            )
        if self.kind == "url":
            return _block("a wheel at a URL", f'jobnik-sdk = {{ url = "{self.location}" }}')
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
            )
        return "# jobnik-sdk comes from the default package index, like every other dependency.\n"

    def _wheel_into(self, wheels: Path) -> Path:
        wheels.mkdir(parents=True, exist_ok=True)
        if self.kind == "wheel":
            return Path(shutil.copy2(self.location, wheels))
        with tempfile.TemporaryDirectory() as out:
            _build_wheel(Path(self.location), Path(out))
            [built] = Path(out).glob("*.whl")
            return Path(shutil.copy2(built, wheels))


def _block(what: str, entry: str) -> str:
    return f"# Where jobnik-sdk comes from: {what}.\n[tool.uv.sources]\n{entry}\n"


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
