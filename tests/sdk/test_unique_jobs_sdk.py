"""`create_job(unique_key=...)`: the second create returns the job holding the key,
stages and all, until it is final (or its window has passed)."""

from __future__ import annotations

from datetime import timedelta

from jobnik_sdk import NewStage, NewTask

from ..support.api import unique
from .conftest import Surface


async def test_a_second_create_with_the_key_returns_the_first_job(surface: Surface) -> None:
    key = unique("export-dataset-7")
    stages = [NewStage(type=unique("export"), tasks=[NewTask()])]
    first = await surface.create_job("export", stages=stages, unique_key=key)
    again = await surface.create_job(
        "export", stages=stages, unique_key=key, unique_window=timedelta(hours=1)
    )
    assert again.id == first.id and again.unique_key == key
    assert again.stages is not None and [s.id for s in again.stages] == [
        s.id for s in first.stages or []
    ]
    await surface.abort(first.id)
    third = await surface.create_job("export", stages=stages, unique_key=key)
    assert third.id != first.id
