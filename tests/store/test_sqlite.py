"""What only the SQLite store has: its file (damage, locks, read-only), its FTS5 tables and
its vector index cache. Everything a ``Store`` promises is tested on both backends in
``test_contract.py``."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from heron import db as heron_db
from heron.db import SQLiteFile, database_path
from heron.embed import MiniLMEmbedder
from heron.errors import DatabaseBusy, DatabaseCorrupt, DatabaseReadOnly, StoreError
from heron.jobs import JOBS, open_jobs
from heron.settings import Settings
from heron.store import Record, check_store, open_store
from heron.store import vectors as vector_indexes
from tests.conftest import sqlite_store
from tests.store.test_contract import DOCS


def test_the_text_index_holds_one_row_per_record(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    store = sqlite_store(tmp_path / "heron.db", embedder)
    store.upsert("k8s", DOCS)
    store.upsert("k8s", [Record("pods", "Pods, rewritten.", {"title": "Pods"})])
    store.delete("k8s", ["cron"])
    store.close()
    with sqlite3.connect(tmp_path / "heron.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM fts_1").fetchone() == (4,)
        orphans = "SELECT count(*) FROM fts_1 WHERE rowid NOT IN (SELECT key FROM records)"
        assert db.execute(orphans).fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM tombstones").fetchone() == (1,)


def test_corrupt_database_file_is_reported(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    path = tmp_path / "heron.db"
    path.write_bytes(b"this is not a database" * 200)
    fix = r"is corrupt .* move it aside .*\(mv .*\); then rebuild it: heron index"
    with pytest.raises(StoreError, match=fix):
        sqlite_store(path, embedder)


def test_hnsw_index_is_used_saved_and_kept_in_sync(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_indexes, "EXACT_LIMIT", 50)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((120, 384)).astype(np.float32)
    records = [Record(f"r{i}", f"record {i}", {}, vector=v) for i, v in enumerate(vectors)]
    store = sqlite_store(tmp_path / "h.db", embedder)
    store.upsert("big", records)
    target = vectors[7] / np.linalg.norm(vectors[7])
    assert store.search("big", "", mode="dense", vector=target, top_k=1)[0].id == "r7"
    assert isinstance(store._indexes["big"][0], vector_indexes.HnswIndex)
    assert (tmp_path / "h.db.vectors").is_dir()
    store.delete("big", ["r7"])
    assert store.search("big", "", mode="dense", vector=target, top_k=1)[0].id != "r7"
    reopened = sqlite_store(tmp_path / "h.db", embedder)
    assert reopened.search("big", "", mode="dense", vector=target, top_k=1)[0].id != "r7"
    assert reopened.count("big") == 119


def test_the_hybrid_search_reads_on_a_second_connection_opened_as_the_first(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    """The word side of a hybrid search runs on the database's second connection
    (``SQLiteDatabase.reader``), opened by ``SQLiteFile.connect`` like the first: it puts
    the file back in WAL mode, and the file and its log stay the user's alone."""
    path = tmp_path / "heron.db"
    store = sqlite_store(path, embedder)
    store.upsert("k8s", DOCS)
    database = store._database
    with database.connection() as db:  # only connection yet: the mode may change
        assert db.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    assert database._reader is None
    assert store.search("k8s", "pods run containers", mode="hybrid", top_k=2)
    with database.reader() as reader:
        assert reader.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    for name in ("heron.db", "heron.db-wal", "heron.db-shm"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
    store.close()
    assert database._reader is None  # closed with the database


def test_no_module_outside_heron_db_connects_to_sqlite_itself() -> None:
    """Every connection to a SQLite file is ``heron.db``'s (WAL, the file private): a
    ``sqlite3.connect`` anywhere else would skip both."""
    heron = Path(heron_db.__file__).parent.parent
    found = [
        str(path.relative_to(heron.parent))
        for path in sorted(heron.rglob("*.py"))
        if path.parent != heron / "db" and "sqlite3.connect" in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_a_backup_copy_and_its_check_go_through_the_file(tmp_path: Path) -> None:
    """``SQLiteFile.copy_to`` leaves a private plain file (no log to replay), its source
    untouched; ``read_only`` reads it without writing."""
    source = SQLiteFile(tmp_path / "x.db", "the test file", "start again")
    with closing(source.connect(timeout=1, schema="CREATE TABLE t (x); INSERT INTO t VALUES (1);")):
        copy = tmp_path / "copy" / "x.db"
        copy.parent.mkdir()
        source.copy_to(copy)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    before = copy.read_bytes()
    with SQLiteFile(copy, "the copy", "copy again").read_only() as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert db.execute("SELECT x FROM t").fetchall() == [(1,)]
        copied = SQLiteFile(copy, "the copy", "copy again")
        with pytest.raises(DatabaseReadOnly), copied.transaction(db):
            db.execute("INSERT INTO t VALUES (2)")
    assert copy.read_bytes() == before


def test_sqlite_errors_name_the_file_and_the_fix(tmp_path: Path) -> None:
    """Busy and read-only from real SQLite: a second connection holding the write lock,
    and a connection opened read-only (mode=ro binds root too)."""
    path = tmp_path / "x.db"
    file = SQLiteFile(path, "the test file", "start again")
    db = file.connect(timeout=0.05, schema="CREATE TABLE IF NOT EXISTS t (x);")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    busy = rf"The test file {path} is locked by another"
    with pytest.raises(DatabaseBusy, match=busy), file.transaction(db):
        pass
    holder.execute("ROLLBACK")
    readonly = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    refused = rf"{path} is read-only \(attempt to write"
    with pytest.raises(DatabaseReadOnly, match=refused), file.transaction(readonly) as conn:
        conn.execute("INSERT INTO t VALUES (1)")
    assert not readonly.in_transaction  # rolled back, the connection stays usable
    with file.transaction(db) as conn:
        conn.execute("INSERT INTO t VALUES (1)")
    for conn in (db, holder, readonly):
        conn.close()


def test_a_store_damaged_where_no_query_looked_fails_its_check(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = tmp_path / "heron.db"
    store = sqlite_store(path, embedder)
    store.upsert("k8s", DOCS)
    store.check()  # a sound file passes
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = db.execute("SELECT min(pageno) FROM dbstat WHERE name = 'fts_1_data'").fetchone()
    with path.open("r+b") as f:
        f.seek((page - 1) * 4096)
        f.write(b"\xa5" * 4096)
    store = sqlite_store(path, embedder)
    assert store.count("k8s") == len(DOCS)  # the damage is where this query does not look
    with pytest.raises(DatabaseCorrupt, match=rf"{path} is corrupt .* \(mv {path} {path}\.bad\)"):
        check_store(store)
    store.close()


def test_the_store_is_the_file_the_url_names_and_the_others_sit_beside_it(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    settings = Settings(home=tmp_path / "home", database_url=f"sqlite:///{tmp_path / 'team.db'}")
    with open_store(settings, embedder) as store:
        store.upsert("k8s", DOCS[:1])
        assert store.where == str(tmp_path / "team.db")
    with open_jobs(settings):
        pass
    assert database_path(settings, JOBS) == tmp_path / "jobs.db"
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["jobs.db", "team.db"]


def test_the_sqlite_store_opens_where_psycopg_is_not_installed(tmp_path: Path) -> None:
    """Both backends' schemas are declared without psycopg (``heron.store.schema``), so
    the SQLite store opens where the postgres extra is missing, and nothing of
    PostgreSQL's is imported."""
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = sys.modules['psycopg_pool'] = None\n"
        "from heron.embed import RemoteEmbedder\n"
        "from heron.settings import Settings\n"
        "from heron.store import open_store\n"
        "settings = Settings(database_url=sys.argv[1])\n"
        "with RemoteEmbedder('http://127.0.0.1:1/v1', 'm', dim=4) as embedder:\n"
        "    with open_store(settings, embedder) as store:\n"
        "        loaded = 'heron.db.postgres' in sys.modules\n"
        "        print(type(store).__name__, store.namespaces(), loaded)\n"
    )
    url = f"sqlite:///{tmp_path / 'heron.db'}"
    done = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SQLiteStore", "[]", "False"]
