#!/usr/bin/env bash
# Try `jobnik-worker new` as a team outside this repository would, with nothing of the
# repository but the SDK's wheel (and beside it the protocol's, which the SDK needs, and
# the manager's, which the projects' tests serve in-process through jobnik-sdk[testing]):
#
#   scripts/try_scaffold.sh [WORKDIR]        # WORKDIR: new or empty, outside the repository
#
# In WORKDIR (a new temporary directory by default), with an empty uv cache and the
# SDK's wheel as the only source of jobnik-sdk (everything else comes from the normal
# package index), it:
#   1. builds the SDK's sdist and, from it, its wheel, and the protocol's and the
#      manager's wheels;
#   2. scaffolds two workers, for the stage types tile-render and tile-publish, with
#      the scaffold run from that wheel (`uvx --from <wheel> --with <protocol's wheel>
#      jobnik-worker new ...`);
#   3. runs `uv run pytest` in each;
#   4. installs both into one environment, starts a manager (the repository's, on a
#      SQLite file in WORKDIR) and both workers side by side, and runs a two-stage job,
#      tile-render then tile-publish, to COMPLETED;
#   5. builds tile-publish's image with podman from its directory alone (on the local
#      Debian base; BASE_IMAGE, CA_BUNDLE as for deploy/local/build-images.sh), and runs
#      a tile-publish job on a container of it;
#   6. renders both projects' Helm values with the repository's worker chart (Helm's
#      engine from helm-python-sdk, the repository's `deploy` group, as deploy/tests do).
# It prints the time of each step and exits non-zero at the first that fails.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n ${1:-} ]]; then
  mkdir -p "$1"
  WORK=$(cd "$1" && pwd)
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/jobnik-try-scaffold.XXXXXX")
fi
case "$WORK/" in "$REPO"/*)
  echo "WORKDIR must be outside the repository (uv would take it for part of the workspace)" >&2
  exit 2
  ;;
esac
if [[ -n $(ls -A "$WORK") ]]; then
  echo "WORKDIR $WORK is not empty" >&2
  exit 2
fi
export UV_CACHE_DIR="$WORK/uv-cache" # empty: everything is fetched anew
# The repository's own environment (the manager, the chart renderer) keeps the user's cache.
repo_uv() { (cd "$REPO" && env -u UV_CACHE_DIR uv "$@"); }

START=$SECONDS
STEP_START=
step() {
  [[ -n $STEP_START ]] && printf '   (%ds)\n' $((SECONDS - STEP_START))
  STEP_START=$SECONDS
  printf '\n== %s\n' "$*"
}

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_ready() {
  for _ in $(seq 1 100); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$1/readiness" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "the manager did not become ready; see $WORK/manager.log" >&2
  return 1
}

step "1. the SDK's wheel (sdist, then the wheel from it), uv cache $UV_CACHE_DIR"
(cd "$REPO" && uv build --package jobnik-sdk --out-dir "$WORK/dist" 2>&1 | tail -2)
for package in jobnik-protocol jobnik-manager; do
  (cd "$REPO" && uv build --package "$package" --wheel --out-dir "$WORK/dist" 2>&1 | tail -1)
done
WHEEL=$(ls "$WORK"/dist/jobnik_sdk-*-py3-none-any.whl)
PROTOCOL_WHEEL=$(ls "$WORK"/dist/jobnik_protocol-*-py3-none-any.whl)
unzip -l "$WHEEL" | grep -c 'jobnik_sdk/_template/' | sed 's/^/   template files in the wheel: /'

cd "$WORK"
step "2. two workers, scaffolded from the wheel alone"
# The SDK's command, with the protocol's wheel it needs (no index serves it).
uvx --from "$WHEEL" --with "$PROTOCOL_WHEEL" jobnik-worker new tile-render --stage-type tile-render
uvx --from "$WHEEL" --with "$PROTOCOL_WHEEL" jobnik-worker new tile-publish \
  --stage-type tile-publish --sdk-source "$WHEEL"
for project in tile-render tile-publish; do
  grep -A1 '^\[tool.uv.sources\]' "$project/pyproject.toml" | tail -1 | sed "s/^/   $project: /"
done

step "3. uv run pytest in each"
for project in tile-render tile-publish; do
  (cd "$project" && uv run pytest -q 2>&1 | tail -1 | sed "s/^/   $project: /")
done

step "4. both workers in one environment, one two-stage job across them"
uv venv -q "$WORK/env"
# One SDK for both: each project's source names its own copy of the wheel, so the
# shared environment takes the one wheel itself.
uv pip install -q --python "$WORK/env" --no-sources "$WHEEL" "$PROTOCOL_WHEEL" \
  ./tile-render ./tile-publish
ls "$WORK/env/bin" | grep -- '-worker$' | sed 's/^/   command: /'
PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
# The repository's interpreter itself, not `uv run`, so that $! is the manager's own pid.
MANAGER_PYTHON=$(repo_uv run --quiet python -c 'import sys; print(sys.executable)')
JOBNIK_DATABASE_URL="sqlite+aiosqlite:///$WORK/jobnik.db" JOBNIK_PORT=$PORT JOBNIK_LOG_LEVEL=warning \
  "$MANAGER_PYTHON" -m jobnik_manager.cli serve >"$WORK/manager.log" 2>&1 &
PIDS+=($!)
wait_ready "$URL"
echo "   manager: $URL (SQLite $WORK/jobnik.db)"
fast=(WORKER_MANAGER_URL="$URL" WORKER_POLL_INITIAL_SECONDS=0.05 WORKER_POLL_MAX_SECONDS=0.2)
env "${fast[@]}" WORKER_NAME=render-1 "$WORK/env/bin/tile-render-worker" >"$WORK/render.log" 2>&1 &
RENDER=$!
PIDS+=($RENDER)
env "${fast[@]}" WORKER_NAME=publish-1 "$WORK/env/bin/tile-publish-worker" >"$WORK/publish.log" 2>&1 &
PUBLISH=$!
PIDS+=($PUBLISH)
cat >"$WORK/run_job.py" <<'EOF'
"""Create a job whose stages are the given stage types (two tiles each), wait for it,
and check that each stage's tasks were run by the worker named for it."""

import asyncio
import sys
from datetime import timedelta

from jobnik_sdk import JobnikClient, JobStatus, NewStage, NewTask


async def main(url: str, plan: list[tuple[str, str]]) -> None:
    async with JobnikClient(url) as client:
        job = await client.create_job(
            "try-scaffold",
            stages=[
                NewStage(type=t, tasks=[NewTask(data={"x": x, "y": 0, "zoom": 1}) for x in (0, 1)])
                for t, _ in plan
            ],
        )
        done = await client.wait(job.id, poll_interval=timedelta(milliseconds=200), timeout=timedelta(seconds=60))
        print(f"   job {job.id}: {done.status.value}")
        assert done.status is JobStatus.COMPLETED, done.status
        for stage, (stage_type, worker) in zip(job.stages or [], plan, strict=True):
            tasks = (await client.list_tasks(stage_id=stage.id)).items
            ran = sorted({t.worker or "?" for t in tasks})
            results = sorted(str((t.result or {}).get("tile")) for t in tasks)
            print(f"   stage {stage_type}: {[t.status.value for t in tasks]} by {ran}, results {results}")
            assert ran == [worker], (stage_type, ran)


asyncio.run(main(sys.argv[1], [tuple(a.split("=")) for a in sys.argv[2:]]))
EOF
"$WORK/env/bin/python" "$WORK/run_job.py" "$URL" tile-render=render-1 tile-publish=publish-1
kill -TERM "$RENDER" "$PUBLISH"
wait "$RENDER" && wait "$PUBLISH" && echo "   both workers stopped on SIGTERM, exit 0"

step "5. tile-publish's image built with podman from its directory alone"
if ! command -v podman >/dev/null 2>&1; then
  echo "   skipped: no podman here (deploy/tests/test_containers.py builds such an image)"
else
# On the local Debian base (deploy/local/base-image.sh) unless BASE_IMAGE names another.
export CONTAINERS_CONF=${CONTAINERS_CONF:-$REPO/deploy/local/containers.conf}
BASE=${BASE_IMAGE:-localhost/jobnik-debian-python:bookworm}
case $BASE in localhost/jobnik-debian-python:*) "$REPO/deploy/local/base-image.sh" "$BASE" ;; esac
ca=()
if [[ -n ${CA_BUNDLE:-} ]]; then
  ca=(--volume "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro"
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
    --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
fi
(cd tile-publish && uv lock -q)
podman build --format docker --network host "${ca[@]}" --build-arg "BASE_IMAGE=$BASE" \
  -t localhost/tile-publish-worker:try tile-publish >"$WORK/image.log" 2>&1 || {
  tail -20 "$WORK/image.log"
  exit 1
}
podman image inspect --format '   image: {{.Size}} bytes, user {{.Config.User}}' localhost/tile-publish-worker:try
if podman run --rm -e WORKER_HANDLER=tile_publish_worker.handler:publish \
  localhost/tile-publish-worker:try 2>"$WORK/missing.log"; then
  echo "a missing handler must stop the worker" >&2
  exit 1
fi
sed 's/^/   missing handler: /' "$WORK/missing.log"
podman run -d --name tile-publish-try --network host -e WORKER_NAME=image-1 \
  -e WORKER_MANAGER_URL="$URL" -e WORKER_POLL_INITIAL_SECONDS=0.05 -e WORKER_POLL_MAX_SECONDS=0.2 \
  localhost/tile-publish-worker:try >/dev/null
"$WORK/env/bin/python" "$WORK/run_job.py" "$URL" tile-publish=image-1
podman stop -t 30 tile-publish-try >/dev/null
echo "   the image's worker stopped on SIGTERM, exit $(podman inspect --format '{{.State.ExitCode}}' tile-publish-try)"
podman rm tile-publish-try >/dev/null
fi

step "6. both projects' Helm values rendered with deploy/helm/jobnik-worker"
repo_uv run --quiet --locked --group deploy python - "$WORK/tile-render" "$WORK/tile-publish" <<'EOF'
import sys
from pathlib import Path

import helm_python
import yaml

chart = Path("deploy/helm/jobnik-worker")
for project in map(Path, sys.argv[1:]):
    values = yaml.safe_load((project / "deploy" / "helm-values.yaml").read_text())
    report = helm_python.lint(str(chart), values, strict=True)
    assert not report["errors"], report
    with helm_python.Chart.load(str(chart)) as loaded:
        out = loaded.render(values, name=project.name, namespace="jobnik", is_install=True)
    docs = [d for path, text in sorted(out.items()) if not path.endswith("NOTES.txt")
            for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        container = doc["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        print(f"   {project.name}: {doc['kind']} {doc['metadata']['name']}, image "
              f"{container['image']}, WORKER_STAGE_TYPE={env['WORKER_STAGE_TYPE']}")
EOF

kill -TERM "${PIDS[0]}" && wait "${PIDS[0]}" || true  # the manager

step "done"
echo "   all steps passed in $((SECONDS - START))s; files in $WORK"
