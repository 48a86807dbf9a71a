"""``heron.skills`` exports what ``__all__`` lists."""

from __future__ import annotations

from pathlib import Path

import pytest

import heron.skills
from heron.embed import Embedder
from heron.errors import StoreError
from heron.settings import Settings
from heron.skills import open_skills
from heron.store import Record, SQLiteStore


def test_all_names_exist() -> None:
    for name in heron.skills.__all__:
        assert hasattr(heron.skills, name), name
    assert sorted(heron.skills.__all__) == sorted(set(heron.skills.__all__))


def test_open_skills_leaves_a_store_it_is_handed_open(home: Path, store: SQLiteStore) -> None:
    skills = open_skills(Settings(), store=store)
    assert skills.store is store
    skills.close()
    store.upsert("notes", [Record("a", "still open")])
    assert store.count("notes") == 1


def test_open_skills_closes_the_store_it_opened(home: Path, embedder: Embedder) -> None:
    skills = open_skills(Settings(), embedder)
    skills.close()
    with pytest.raises(StoreError, match="closed"):
        skills.store.count("notes")
    assert embedder.embed(["the embedder it was handed stays open"]).shape[0] == 1
