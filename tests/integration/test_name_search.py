"""Finding jobs by part of their name (`name_contains`, an extension): in any case, the
text taken as it is (no wildcards), with the other filters, on both backends; served by
a trigram index on PostgreSQL. Bad input answers 400."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from jobnik_manager.db.engine import Database

from ..support.api import Api


async def names(api: Api, **params: object) -> list[str]:
    page = await api.call("GET", "/v1/jobs", params={"page_size": 100, **params})
    return sorted(j["name"] for j in page["items"])


async def test_jobs_are_found_by_part_of_their_name(api: Api) -> None:
    for name in ("Roads export", "rivers export", "roads_100%", "tiles"):
        await api.call("POST", "/v1/jobs", 201, json={"name": name, "data": {}})
    assert await names(api, name_contains="export") == ["Roads export", "rivers export"]
    assert await names(api, name_contains="ROADS") == ["Roads export", "roads_100%"]
    assert await names(api, name_contains="_100%") == ["roads_100%"]  # not wildcards
    assert await names(api, name_contains="s_1") == ["roads_100%"]
    assert await names(api, name_contains="%") == ["roads_100%"]
    assert await names(api, name_contains="nothing") == []
    # With the other filters, and v1's exact name untouched.
    assert await names(api, name_contains="export", job_name="rivers export") == ["rivers export"]
    assert await names(api, name_contains="export", status="COMPLETED") == []


@pytest.mark.parametrize("bad", ["", "x" * 101])
async def test_a_bad_search_answers_400(api: Api, bad: str) -> None:
    answer = await api.call("GET", "/v1/jobs", 400, params={"name_contains": bad})
    assert answer["code"] == "VALIDATION_ERROR" and answer["message"]


@pytest.mark.postgres_only
async def test_postgresql_searches_names_through_their_trigrams(pg_db: Database) -> None:
    async with pg_db.engine.connect() as conn:
        await conn.execute(text("SET LOCAL enable_seqscan = off"))  # a table this small: forced
        plan = "\n".join(
            r[0]
            for r in await conn.execute(
                text("EXPLAIN SELECT id FROM jobs WHERE name ILIKE '%' || :q || '%'"),
                {"q": "export"},
            )
        )
    assert "ix_jobs_name_trgm" in plan, plan
