#!/usr/bin/env bash
# deploy/compose.yaml (with compose.local.yaml's stand-ins) brought up by podman-compose
# on podman 4.3, Debian 12's, from the repository root:
#
#   deploy/local/up.sh [PROJECT] [WORKERS]     # default: jobnik 1
#
# That podman cannot do two things compose.yaml asks for: without systemd it runs no
# health check by itself, and podman-compose ignores `condition: service_healthy` before
# podman 4.6 (its start-order links also fail there). So this brings the services up
# one at a time in the order of their depends_on, and waits for each condition itself,
# running the image's health check (`podman healthcheck run`). On Docker, or podman 4.6
# and newer with systemd, `up -d` does the same alone. Extra podman-compose options go
# in COMPOSE_OPTIONS (e.g. "--profile monitoring" to start Prometheus too).
set -euo pipefail
cd "$(dirname "$0")/../.."
PROJECT=${1:-jobnik}
WORKERS=${2:-1}
# shellcheck disable=SC2206
compose=(podman-compose -p "$PROJECT" -f deploy/compose.yaml -f deploy/compose.local.yaml ${COMPOSE_OPTIONS:-})

up() { "${compose[@]}" up -d --no-build --no-deps "$@" >/dev/null; }

healthy() { # CONTAINER [SECONDS]
  local deadline=$((SECONDS + ${2:-120}))
  until podman healthcheck run "$1" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      echo "$1 is not healthy after ${2:-120} s; its log:" >&2
      podman logs --tail 30 "$1" >&2
      exit 1
    fi
    sleep 1
  done
  echo "$1 healthy"
}

up postgres
up rabbitmq
healthy "${PROJECT}_postgres_1"
healthy "${PROJECT}_rabbitmq_1"
up manager-migrate
status=$(podman wait "${PROJECT}_manager-migrate_1")
if [[ $status != 0 ]]; then
  podman logs --tail 30 "${PROJECT}_manager-migrate_1" >&2
  echo "the migrations failed (exit $status)" >&2
  exit 1
fi
echo "${PROJECT}_manager-migrate_1 exited 0"
up manager
healthy "${PROJECT}_manager_1"
up --scale "worker=$WORKERS" worker
for i in $(seq 1 "$WORKERS"); do healthy "${PROJECT}_worker_$i" 60; done
case " ${COMPOSE_OPTIONS:-} " in *" monitoring "* | *"--profile=monitoring"*)
  up prometheus
  echo "${PROJECT}_prometheus_1 started"
  ;;
esac
