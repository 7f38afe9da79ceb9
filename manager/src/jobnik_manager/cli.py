"""`jobnik-manager`: serve the API, migrate the database, or delete old finished jobs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import ValidationError

from jobnik_protocol.logs import configure_logging, uvicorn_log_config
from jobnik_protocol.process import tune_gc

from .db import migrate
from .db.engine import Database
from .domain.auth import Role
from .domain.durations import parse_duration
from .maintenance import retention
from .services import tokens
from .settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI


def _serve(settings: Settings, *, demo: bool, workers: int) -> None:
    import uvicorn

    from .http_protocol import JoinedWritesProtocol

    if workers < 1:
        raise SystemExit("--workers takes a number of processes, 1 or more")
    if workers > 1:
        if settings.is_sqlite:
            raise SystemExit("SQLite supports one manager process; use PostgreSQL for --workers")
        if demo:
            raise SystemExit("--demo runs in a single process; leave out --workers")
    if settings.migrate_on_start:
        migrate.upgrade(settings.database_url)
    else:
        _refuse_unless_migrated(settings)
    log_config = uvicorn_log_config(settings.log_level.upper(), settings.log_format)
    # lifespan="on": the lifespan starts the reaper, retries, schedules and relay, so a
    # startup that fails stops the process (uvicorn's "auto" would log one INFO line and
    # serve on without them).
    if workers > 1:
        with _shared_metrics(settings):
            # Each process builds its own app from the same environment.
            uvicorn.run(
                "jobnik_manager.cli:served_app",
                factory=True,
                host=settings.host,
                port=settings.port,
                workers=workers,
                log_level=settings.log_level,
                log_config=log_config,
                lifespan="on",
                http=JoinedWritesProtocol,
                access_log=settings.access_log,
            )
        return
    app = served_app(settings)
    if demo:
        from .demo import attach_demo

        attach_demo(app, settings)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=log_config,
        lifespan="on",
        http=JoinedWritesProtocol,
        access_log=settings.access_log,
    )


@contextlib.contextmanager
def _shared_metrics(settings: Settings) -> Iterator[None]:
    """Several processes serve one port: their counters go through files in one directory
    (prometheus-client's multiprocess mode), so a scrape answered by any of them counts
    them all. A directory the environment names is used as it is; otherwise one is made
    for this server and removed when it stops."""
    if not settings.metrics or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="jobnik-metrics-") as directory:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        try:
            yield
        finally:
            del os.environ["PROMETHEUS_MULTIPROC_DIR"]


def _refuse_unless_migrated(settings: Settings) -> None:
    """Stop with one line when the database is reachable but behind this code's
    migrations; one that cannot be reached yet is left to the readiness probe."""
    import asyncio

    from sqlalchemy.engine import make_url

    from .db.engine import make_engine

    async def revision() -> str | None:
        engine = make_engine(settings.database_url, pool_size=1)
        try:
            return await migrate.current(engine)
        finally:
            await engine.dispose()

    try:
        at = asyncio.run(revision())
    except Exception as exc:
        logging.getLogger("jobnik_manager").warning(
            "database not reachable at start (%s); serving, not ready until it is", exc
        )
        return
    latest = migrate.head()
    if at != latest:
        name = make_url(settings.database_url).render_as_string(hide_password=True)
        raise SystemExit(migrate.behind_message(name, at, latest))


def served_app(settings: Settings | None = None) -> FastAPI:
    """The app as `serve` runs it. What exists once it is built lives as long as the
    process: the collector stops scanning it (gc.freeze), which spares large requests
    long full collections; and the young generation is collected less often."""
    from .app import create_app

    app = create_app(settings)
    gc.collect()
    gc.freeze()
    tune_gc()
    return app


def _duration(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def _tokens(settings: Settings, args: argparse.Namespace) -> None:
    db = Database(settings.database_url, pool_size=1)
    try:
        if args.tokens == "create":
            types = [t.strip() for t in args.stage_types.split(",") if t.strip()]
            made = await db.transaction(
                lambda s: tokens.create(s, args.name, Role(args.role), types)
            )
            # The only time the token is shown: it is kept as a hash.
            print(made.token)
        elif args.tokens == "list":
            for row in await db.transaction(tokens.listed):
                state = "revoked" if row.revoked_at else "live"
                limit = ",".join(row.stage_types or []) or "-"
                print(f"{row.name}\t{row.role}\t{limit}\t{state}\t{row.created_at.isoformat()}")
        else:
            await db.transaction(lambda s: tokens.revoke(s, args.name))
            print(f"revoked {args.name}")
    finally:
        await db.dispose()


async def _cleanup(settings: Settings, older_than: timedelta, *, dry_run: bool) -> None:
    """Delete (or count) the finished jobs that ended over `older_than` ago."""
    db = Database(settings.database_url, pool_size=2)
    try:
        before = db.clock.now() - older_than
        if dry_run:
            async with db.sessions() as s:
                counted = await retention.count_finished_before(s, before)
            print(f"would delete {counted} that ended before {before.isoformat()}")
        else:
            deleted = await retention.delete_finished_before(db, before)
            print(f"deleted {deleted} that ended before {before.isoformat()}")
    finally:
        await db.dispose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="jobnik-manager", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", help="bind address (JOBNIK_HOST)")
    serve.add_argument("--port", type=int, help="port (JOBNIK_PORT)")
    serve.add_argument(
        "--demo", action="store_true", help="also run a demo job through the manager once it is up"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="serve from this many processes (PostgreSQL only; each runs the background loops)",
    )
    sub.add_parser("migrate", help="apply database migrations (JOBNIK_DATABASE_URL)")
    cleanup = sub.add_parser(
        "cleanup",
        help="delete finished jobs (with their stages, tasks and events) that ended long ago",
    )
    cleanup.add_argument(
        "--older-than",
        required=True,
        type=_duration,
        metavar="DURATION",
        help="how long ago they ended: 7d, 12h, 30m, 1d12h or ISO 8601 (P7D)",
    )
    cleanup.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    token_commands = sub.add_parser(
        "tokens", help="API tokens for JOBNIK_AUTH=on: create, list, revoke"
    ).add_subparsers(dest="tokens", required=True)
    create = token_commands.add_parser("create", help="make a token and print it, once")
    create.add_argument("--name", required=True, help="who or what holds it (unique)")
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    create.add_argument(
        "--stage-types", default="", help="a worker token's stage types, comma-separated"
    )
    token_commands.add_parser("list", help="the tokens, without their secrets")
    revoke = token_commands.add_parser("revoke", help="stop a token working, at once")
    revoke.add_argument("name")
    args = parser.parse_args(argv)

    overrides = {
        k: v
        for k, v in (("host", getattr(args, "host", None)), ("port", getattr(args, "port", None)))
        if v is not None
    }
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "JOBNIK_" + "_".join(str(p) for p in first["loc"]).upper()
        parser.exit(2, f"jobnik-manager: {where}: {first['msg']}\n")
    configure_logging(settings.log_level.upper(), settings.log_format)
    if args.command == "migrate":
        migrate.upgrade(settings.database_url)
        logging.getLogger("jobnik_manager").info("database is at the latest revision")
    elif args.command == "cleanup":
        _refuse_unless_migrated(settings)
        asyncio.run(_cleanup(settings, args.older_than, dry_run=args.dry_run))
    elif args.command == "tokens":
        _refuse_unless_migrated(settings)
        try:
            asyncio.run(_tokens(settings, args))
        except tokens.TokenError as exc:
            parser.exit(1, f"jobnik-manager: {exc}\n")
    else:
        _serve(settings, demo=args.demo, workers=args.workers)


if __name__ == "__main__":
    main()
