"""Replay a Dockerfile's build steps without a Docker engine.

    python scripts/replay_dockerfile.py DOCKERFILE CONTEXT ROOT [--python PYTHON]

The build context is CONTEXT as `docker build` would send it (its .dockerignore, or
<Dockerfile>.dockerignore, applied), and ROOT an empty directory that stands in for the
image's file system: /opt/venv is ROOT/opt/venv, a WORKDIR /src is ROOT/src. The first
stage's ENV, WORKDIR, COPY and RUN steps run in order, RUN with bash, its --mount
options dropped, in an environment of nothing but the Dockerfile's ENV, a HOME under
ROOT and a PATH that starts with a new virtual environment of PYTHON (the base image's
Python: `pip` there is that environment's). A later stage's `COPY --from` finds what
the first one built where it left it; its RUN steps (users, permissions) are skipped.
The last line printed is the entry point, as a path under ROOT.

What this does not show: the base image itself, users and permissions, and anything
a RUN step reads outside the build context by absolute path (refused, not guessed).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

# The machine's own network settings (certificates, proxies), which a Docker build
# would get from the daemon's.
PASSED_THROUGH = re.compile(
    r"(SSL_CERT_FILE|SSL_CERT_DIR|PIP_CERT|REQUESTS_CA_BUNDLE|.*_PROXY)$", re.IGNORECASE
)


def steps(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions, continuation lines joined and comments dropped."""
    joined: list[str] = []
    current = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            joined.append(current.strip())
        current = ""
    parsed = []
    for instruction in joined:
        keyword, _, rest = instruction.partition(" ")
        parsed.append((keyword.upper(), rest.strip()))
    return parsed


def ignore_patterns(dockerfile: Path, context: Path) -> list[str]:
    for candidate in (
        dockerfile.with_name(dockerfile.name + ".dockerignore"),
        context / ".dockerignore",
    ):
        if candidate.is_file():
            return [
                line.strip()
                for line in candidate.read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
    return []


def kept(patterns: list[str], path: str) -> bool:
    """Whether a path is sent with the context: the last pattern that matches wins."""
    keep = True
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = (raw[1:] if negate else raw).rstrip("/")
        prefixes = [path, *("/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1))]
        anywhere = pattern.startswith("**/")
        if any(
            fnmatch.fnmatchcase(p, pattern)
            or (anywhere and fnmatch.fnmatchcase(p.rsplit("/", 1)[-1], pattern[3:]))
            for p in prefixes
        ):
            keep = negate
    return keep


def sent_context(dockerfile: Path, context: Path, into: Path) -> None:
    patterns = ignore_patterns(dockerfile, context)
    for path in sorted(context.rglob("*")):
        relative = path.relative_to(context).as_posix()
        if path.is_file() and kept(patterns, relative):
            (into / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / relative)


def under(root: Path, value: str) -> str:
    """A colon-separated value (a path, a PATH) with its absolute parts moved under root."""
    return ":".join(str(root) + part if part.startswith("/") else part for part in value.split(":"))


def expand(value: str, env: dict[str, str]) -> str:
    """$NAME and ${NAME} replaced with the build's own environment, as Docker does."""
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), ""), value)


def replay(dockerfile: Path, context: Path, root: Path, python: str) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    sent = root / ".context"
    sent_context(dockerfile, context, sent)
    tools = root / ".tools"
    subprocess.run([python, "-m", "venv", str(tools)], check=True)
    # The image's Python comes next on PATH, as /usr/local/bin does in python:3.x: uv
    # creates the project's environment from it, not from a virtual environment.
    home = subprocess.run(
        [python, "-c", "import sys; print(sys.base_prefix)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    base = {
        "PATH": f"{tools / 'bin'}:{home}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(root / "root"),
        **{k: v for k, v in os.environ.items() if PASSED_THROUGH.match(k)},
    }
    env = dict(base)
    cwd = root
    stage = -1
    entrypoint: list[str] = []
    for keyword, args in steps(dockerfile.read_text()):
        if keyword == "FROM":
            stage += 1
            env, cwd = dict(base), root
            print(f"FROM {args}", flush=True)
        elif keyword == "ENV":
            for pair in shlex.split(args):
                name, _, value = pair.partition("=")
                env[name] = expand(under(root, value), env)
        elif keyword == "WORKDIR":
            cwd = root / args.lstrip("/")
            cwd.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            parts = shlex.split(args)
            if any(p.startswith("--from") for p in parts):
                *sources, target = [p for p in parts if not p.startswith("--")]
                for source in sources:
                    if not (root / source.lstrip("/")).exists():
                        raise SystemExit(f"COPY --from: {source} was not built")
                continue
            *sources, target = [p for p in parts if not p.startswith("--")]
            destination = cwd / target if not target.startswith("/") else root / target.lstrip("/")
            for source in sources:
                found = sent / source.rstrip("/")
                if not found.exists():
                    raise SystemExit(f"COPY {source}: not in the build context")
                if found.is_dir():
                    shutil.copytree(found, destination, dirs_exist_ok=True)
                elif target.endswith("/"):
                    destination.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(found, destination / found.name)
                else:
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(found, destination)
            print(f"COPY {args}", flush=True)
        elif keyword == "RUN":
            command = re.sub(r"^(--\S+\s+)+", "", args)
            if stage > 0:
                print(f"RUN {command}  (skipped: runtime stage)", flush=True)
                continue
            if re.search(r"(^|\s)/", command):
                raise SystemExit(f"RUN {command}: reads an absolute path; not replayed")
            print(f"RUN {command}", flush=True)
            subprocess.run(["bash", "-ec", command], cwd=cwd, env=env, check=True)
        elif keyword == "ENTRYPOINT":
            entrypoint = json.loads(args)
    if not entrypoint:
        raise SystemExit("no ENTRYPOINT")
    program = shutil.which(entrypoint[0], path=env["PATH"])
    if program is None:
        raise SystemExit(f"ENTRYPOINT {entrypoint[0]} is not on the image's PATH")
    return [program, *entrypoint[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dockerfile", type=Path)
    parser.add_argument("context", type=Path)
    parser.add_argument("root", type=Path)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    entrypoint = replay(
        args.dockerfile.resolve(), args.context.resolve(), args.root.resolve(), args.python
    )
    print("entrypoint:", shlex.join(entrypoint))


if __name__ == "__main__":
    main()
