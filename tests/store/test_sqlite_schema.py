"""The SQLite store's schema version (``PRAGMA user_version``) and its migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from heron.db import SQLiteFile, migrate
from heron.embed import MiniLMEmbedder
from heron.errors import StoreError
from heron.store import Record, SQLiteStore
from heron.store.schema import REBUILD, SQLITE_MIGRATIONS
from tests.conftest import sqlite_store


def version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA user_version").fetchone()[0]


def test_a_new_store_is_at_the_latest_version(store: SQLiteStore) -> None:
    assert store.schema_version == len(SQLITE_MIGRATIONS) == version(store.path)


def test_a_store_from_before_versions_is_adopted_with_its_records(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = tmp_path / "old.db"
    first = sqlite_store(path, embedder)
    first.upsert("docs", [Record("a", "Pods run containers")])
    first.close()
    with sqlite3.connect(path) as db:  # as a Heron before schema versions left it
        db.execute("DROP INDEX records_language")
        db.execute("ALTER TABLE records DROP COLUMN language")
        db.execute("PRAGMA user_version = 0")
    store = sqlite_store(path, embedder)
    try:
        assert store.schema_version == len(SQLITE_MIGRATIONS)
        assert store.get("docs", "a").text == "Pods run containers"
        # Its records were analysed as English, and are still searched so.
        assert store.search("docs", "running pods", mode="lexical")[0].id == "a"
    finally:
        store.close()


def test_a_newer_store_is_refused_untouched(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    path = tmp_path / "new.db"
    sqlite_store(path, embedder).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {len(SQLITE_MIGRATIONS) + 1}")
    with pytest.raises(StoreError, match=r"newer than this Heron knows.*Upgrade Heron"):
        sqlite_store(path, embedder)
    assert version(path) == len(SQLITE_MIGRATIONS) + 1


def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "heron.db"
    file = SQLiteFile(path, "the store", REBUILD)
    db = file.connect(timeout=5)
    try:
        shipped = len(SQLITE_MIGRATIONS)
        assert migrate(db, file, SQLITE_MIGRATIONS) == shipped
        broken = (*SQLITE_MIGRATIONS, "CREATE TABLE extra (x); INSERT INTO missing VALUES (1)")
        with pytest.raises(StoreError):
            migrate(db, file, broken)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert "extra" not in tables and version(path) == shipped
        added = (*SQLITE_MIGRATIONS, "CREATE TABLE extra (x); INSERT INTO extra VALUES (1)")
        assert migrate(db, file, added) == shipped + 1
        assert db.execute("SELECT x FROM extra").fetchall() == [(1,)]
    finally:
        db.close()
