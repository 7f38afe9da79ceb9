# syntax=docker/dockerfile:1
# The example worker (worker-boilerplate/, stage type tile-render) as an image, built
# from the repository root, where the uv workspace (pyproject.toml, uv.lock) lives:
#
#   docker build -f deploy/worker.Dockerfile -t tile-render-worker .
#
# A worker project of its own (`jobnik-worker new`) builds from its own directory with
# its own Dockerfile instead: worker-boilerplate/Dockerfile is that one's template.

# The base of both stages: any image with Python 3.11 or newer and its venv module
# (`--build-arg BASE_IMAGE=...` for a local one where no registry is reachable).
ARG BASE_IMAGE=python:3.12-slim

# --- build: resolve the locked dependencies into a virtualenv ----------------
FROM ${BASE_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/venv

# uv in a virtualenv of its own: a distribution's Python refuses system-wide installs
# (PEP 668). Unpinned on purpose: uv.lock, not uv's version, fixes what gets installed.
# hadolint ignore=DL3013
RUN python3 -m venv /opt/uv && /opt/uv/bin/pip install --no-cache-dir uv \
    && ln -s /opt/uv/bin/uv /usr/local/bin/uv

WORKDIR /src

# uv checks the lock against every workspace member, so all members'
# pyproject.toml files are needed, though only the worker, the SDK and the protocol
# are installed.
COPY pyproject.toml uv.lock ./
COPY protocol/pyproject.toml protocol/
COPY manager/pyproject.toml manager/
COPY sdk/pyproject.toml sdk/
COPY worker-boilerplate/pyproject.toml worker-boilerplate/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --locked --no-dev --no-install-workspace --package tile-render-worker

# The protocol, the SDK and the worker, installed as wheels (not editable), so the
# virtualenv is self-contained and the sources are not needed at run time.
COPY protocol/src/ protocol/src/
COPY sdk/hatch_build.py sdk/
COPY sdk/src/ sdk/src/
COPY worker-boilerplate/ worker-boilerplate/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --locked --no-dev --no-editable --package tile-render-worker

# --- runtime -----------------------------------------------------------------
# Same base image as the build stage: the virtualenv's interpreter links to it.
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    WORKER_HEALTH_FILE=/tmp/worker-health

COPY --from=build /opt/venv /opt/venv

# A numeric USER lets Kubernetes verify runAsNonRoot (the worker chart runs uid 10001).
RUN useradd --system --uid 10001 --no-create-home worker
USER 10001
WORKDIR /home/worker

# On SIGTERM the worker stops claiming and lets running tasks finish for up to
# WORKER_SHUTDOWN_GRACE_SECONDS; the exec form makes the worker PID 1, so it gets it.
STOPSIGNAL SIGTERM
# Healthy while the worker runs and its event loop answers: it touches
# WORKER_HEALTH_FILE every 5 s (a handler that blocks the loop makes it stale).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-m", "jobnik_sdk.health", "/tmp/worker-health"]
ENTRYPOINT ["tile-render-worker"]
