#!/usr/bin/env bash
# Build, with podman, every image that deploy/compose.yaml runs, from Debian's packages
# and PyPI alone (for a machine that reaches no image registry), from the repository:
#
#   deploy/local/build-images.sh
#
# The manager's and the example worker's images (tags jobnik-manager:local and
# jobnik-tile-render-worker:local, as compose.yaml names them) on BASE_IMAGE, and
# stand-ins for PostgreSQL, RabbitMQ and Prometheus (compose.local.yaml). Settings:
#   BASE_IMAGE  the Python base (default localhost/jobnik-debian-python:bookworm, made by
#               base-image.sh when it does not exist yet)
#   CA_BUNDLE   a CA file for PyPI to be trusted by, where the network intercepts TLS
#               (it becomes the image's SSL_CERT_FILE and PIP_CERT too)
# Prints each image's build time and size. Podman's layer cache makes a second run quick.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${BASE_IMAGE:-localhost/jobnik-debian-python:bookworm}
case $BASE in localhost/jobnik-debian-python:*) deploy/local/base-image.sh "$BASE" ;; esac

# Docker's image format: OCI images have no HEALTHCHECK. The host's network: builds fetch
# from PyPI and Debian's mirror.
common=(--format docker --network host --build-arg "BASE_IMAGE=$BASE")
python_flags=()
if [[ -n ${CA_BUNDLE:-} ]]; then
  python_flags=(--volume "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro"
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
    --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
fi
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/jobnik-image-builds.XXXXXX")

build() { # NAME CONTAINERFILE CONTEXT [FLAGS...]
  local name=$1 file=$2 context=$3 start=$SECONDS log
  shift 3
  log="$LOGS/$(basename "$file").log"
  if ! podman build "${common[@]}" "$@" -f "$file" -t "$name" "$context" >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "building $name failed (log: $log)" >&2
    exit 1
  fi
  printf '%-44s built in %3d s, %s\n' "$name" $((SECONDS - start)) \
    "$(podman image inspect --format '{{.Size}}' "$name" | awk '{printf "%.0f MB", $1/1e6}')"
}

build localhost/jobnik-manager:local deploy/manager.Dockerfile . "${python_flags[@]}"
build localhost/jobnik-tile-render-worker:local deploy/worker.Dockerfile . "${python_flags[@]}"
build localhost/jobnik-standin-postgres:15 deploy/local/postgres.Containerfile deploy/local
build localhost/jobnik-standin-rabbitmq:3 deploy/local/rabbitmq.Containerfile deploy/local
build localhost/jobnik-standin-prometheus:2 deploy/local/prometheus.Containerfile deploy/local
rm -rf "$LOGS"
