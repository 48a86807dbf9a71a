from __future__ import annotations

from pathlib import Path

import pytest

import heron.tools
from heron.embed import Embedder
from heron.errors import HeronError, StoreError
from heron.settings import Settings
from heron.store import Record, SQLiteStore
from heron.store.sql import SQLStore
from heron.tools import Toolbox, ToolRegistry, open_tools


def test_all_names_exist() -> None:
    for name in heron.tools.__all__:
        assert hasattr(heron.tools, name), name


# -- ownership: the toolbox closes what open_tools opened, never the store it was handed ----


def stores_made(monkeypatch: pytest.MonkeyPatch) -> list[SQLStore]:
    made: list[SQLStore] = []
    real = SQLStore.__init__

    def init(store: SQLStore, embedder: Embedder) -> None:
        made.append(store)
        real(store, embedder)

    monkeypatch.setattr(SQLStore, "__init__", init)
    return made


def test_a_toolbox_leaves_the_store_it_was_handed_open(
    home: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = stores_made(monkeypatch)
    box = open_tools(Settings(), store=store, connect=False)
    with pytest.raises(HeronError):  # no skills indexed: the skill tool still opens its index
        box.registry.call("search_skills", {"query": "write a skill"})
    box.close()
    assert made == []  # the skill tools searched the toolbox's store, not a second one
    store.upsert("notes", [Record("a", "still open")])
    assert store.count("notes") == 1


def test_a_toolbox_closes_the_store_and_skill_index_it_opened(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = stores_made(monkeypatch)
    box = open_tools(Settings(), connect=False)
    with pytest.raises(HeronError):
        box.registry.call("search_skills", {"query": "write a skill"})
    box.close()
    assert made == [box.store]  # one store: the skill index was opened on it
    with pytest.raises(StoreError, match="closed"):
        box.store.count("notes")


def test_owns_store_still_works_with_a_warning(home: Path, store: SQLiteStore) -> None:
    with pytest.warns(DeprecationWarning, match="owns_store"):
        box = Toolbox(ToolRegistry(), store, owns_store=True)
    box.close()
    with pytest.raises(StoreError, match="closed"):
        store.count("notes")
