# syntax=docker/dockerfile:1
# The manager as an image. Build it from the repository root, where the uv
# workspace (pyproject.toml, uv.lock) lives:
#
#   docker build -f deploy/manager.Dockerfile -t jobnik-manager .
#
# The entry point is `jobnik-manager`; the default command serves the API on
# 0.0.0.0:8080. Run `migrate` instead of the default command to apply the
# database migrations (the compose file and the Helm chart do this in a
# one-shot container before the server starts).

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
# (PEP 668). Unpinned on purpose: uv.lock, not uv's version, fixes what gets installed,
# and a current uv reads every lock format.
# hadolint ignore=DL3013
RUN python3 -m venv /opt/uv && /opt/uv/bin/pip install --no-cache-dir uv \
    && ln -s /opt/uv/bin/uv /usr/local/bin/uv

WORKDIR /src

# uv checks the lock against every workspace member, so all members'
# pyproject.toml files are needed, though only the manager is installed.
# Copying them apart from the sources keeps the dependency layer cached until
# the lock or a pyproject.toml changes.
COPY pyproject.toml uv.lock ./
COPY protocol/pyproject.toml protocol/
COPY manager/pyproject.toml manager/
COPY sdk/pyproject.toml sdk/
COPY worker-boilerplate/pyproject.toml worker-boilerplate/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --locked --no-dev --no-install-workspace --package jobnik-manager

# The manager itself, installed as a wheel (not editable), so the virtualenv is
# self-contained and the sources are not needed at run time; with it the protocol, the
# API's vocabulary and rules it shares with the SDK.
COPY protocol/src/ protocol/src/
COPY manager/src/ manager/src/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --locked --no-dev --no-editable --package jobnik-manager

# --- runtime -----------------------------------------------------------------
# Same base image as the build stage: the virtualenv's interpreter links to its Python.
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH

COPY --from=build /opt/venv /opt/venv

# A numeric USER lets Kubernetes verify runAsNonRoot. The home directory is the
# working directory, so the SQLite default (./jobnik.db) still works in a plain
# `docker run`; with PostgreSQL nothing is written there.
RUN useradd --system --uid 10001 --create-home --home-dir /home/jobnik jobnik
USER 10001
WORKDIR /home/jobnik

EXPOSE 8080
# Healthy once the server answers /readiness with 200 (the database is reachable); the
# image has no curl, and urlopen raises on a 503. JOBNIK_PORT moves the port.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readiness' % os.environ.get('JOBNIK_PORT', '8080'), timeout=4)"]
# Exec form: the server is PID 1 and receives SIGTERM itself.
ENTRYPOINT ["jobnik-manager"]
CMD ["serve", "--host", "0.0.0.0"]
