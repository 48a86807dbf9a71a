"""What only the PostgreSQL store has, against a real PostgreSQL with pgvector (see
tests/postgres.py): migrations, kept counters, reconnects, its URL in ``open_store``, and
parity with SQLite. Everything a ``Store`` promises is tested on both backends in
``test_contract.py``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from heron.db.postgres import migrate, schema_version
from heron.embed import MiniLMEmbedder
from heron.errors import InputError, StoreError
from heron.settings import Settings
from heron.store import Record, SQLiteStore, open_store
from heron.store.parity import parity
from heron.store.postgres import PostgresStore
from heron.store.schema import POSTGRES_MIGRATIONS
from tests.conftest import SHARED, sqlite_store
from tests.postgres import pg_server, pg_url, postgres_store  # noqa: F401
from tests.run_heron import run_heron
from tests.store.test_contract import DOCS

#: Where the store records its migrations.
TABLE = "heron_migrations"


@pytest.fixture
def pg(pg_url: str, embedder: MiniLMEmbedder) -> Iterator[PostgresStore]:  # noqa: F811
    with postgres_store(pg_url, embedder) as store:
        yield store


def _counters(url: str, namespace: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The namespace's kept (documents, terms) and the true ones."""
    with psycopg.connect(url) as conn:
        kept = conn.execute(
            "SELECT docs, tokens FROM heron_namespaces WHERE name = %s", (namespace,)
        ).fetchone()
        true = conn.execute(
            "SELECT count(*), coalesce(sum(length), 0) FROM heron_records r "
            "JOIN heron_namespaces n ON n.id = r.namespace_id WHERE n.name = %s",
            (namespace,),
        ).fetchone()
    assert kept is not None and true is not None
    return (int(kept[0]), int(kept[1])), (int(true[0]), int(true[1]))


def test_document_and_term_counts_stay_exact(pg: PostgresStore) -> None:
    """BM25 reads the namespace's record and term counts from heron_namespaces: every
    upsert, update and delete keeps them equal to what the records hold."""
    pg.upsert("k8s", DOCS)
    changed = Record("pods", "A Pod groups containers that share storage.", {"title": "Pods"})
    assert pg.upsert("k8s", [changed]).updated == 1
    kept, true = _counters(pg.url, "k8s")
    assert kept == true
    assert pg.delete("k8s", ["rollback", "missing"]) == 1
    kept, true = _counters(pg.url, "k8s")
    assert kept == true == (4, true[1])


def test_drop_removes_the_namespace_hnsw_index_and_postings(pg: PostgresStore) -> None:
    pg.upsert("k8s", DOCS)
    indexes = "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'heron_records_hnsw_%'"
    with psycopg.connect(pg.url, autocommit=True) as conn:
        assert conn.execute(indexes).fetchone() == (1,)
        pg.drop("k8s")
        assert conn.execute(indexes).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM heron_postings").fetchone() == (0,)


def test_nul_characters_are_refused_and_nothing_is_written(pg: PostgresStore) -> None:
    pg.upsert("k8s", DOCS[:1])
    for bad in [Record("x", "nul \x00 byte"), Record("x\x00y", "t")]:
        with pytest.raises(InputError, match="PostgreSQL cannot store NUL characters"):
            pg.upsert("k8s", [DOCS[1], bad])
    assert pg.ids("k8s") == ["pods"]


def test_backends_agree_on_real_documents(
    tmp_path: Path,
    pg: PostgresStore,
    embedder: MiniLMEmbedder,
) -> None:
    lines = (SHARED / "data" / "docs" / "scifact" / "corpus.jsonl").open(encoding="utf-8")
    docs = [json.loads(line) for _, line in zip(range(60), lines, strict=False)]
    records = [Record(d["_id"], d["text"], {"title": d["title"]}) for d in docs]
    sqlite = sqlite_store(tmp_path / "heron.db", embedder)
    sqlite.upsert("sci", records)
    pg.upsert(
        "sci", [Record(r.id, r.text, r.metadata, sqlite.get("sci", r.id).vector) for r in records]
    )
    queries = [d["title"] for d in docs[::5]] + ["cell", "protein expression in mice"]
    report = parity(sqlite, pg, "sci", queries)
    assert report.overlap == {"dense": 1.0, "lexical": 1.0, "hybrid": 1.0}
    for query in queries:
        a = sqlite.search("sci", query, mode="lexical", top_k=20)
        b = pg.search("sci", query, mode="lexical", top_k=20)
        np.testing.assert_allclose(
            [h.lexical_score for h in a], [h.lexical_score for h in b], rtol=1e-4
        )
    sqlite.close()


def test_migrations_run_twice_and_concurrently(pg_url: str) -> None:  # noqa: F811
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                migrate(conn, POSTGRES_MIGRATIONS, TABLE)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn, POSTGRES_MIGRATIONS, TABLE) == len(POSTGRES_MIGRATIONS)
        assert conn.execute("SELECT count(*) FROM heron_migrations").fetchone() == (
            len(POSTGRES_MIGRATIONS),
        )


def test_interrupted_migration_leaves_nothing_and_runs_again(pg_url: str) -> None:  # noqa: F811
    broken = (*POSTGRES_MIGRATIONS, "CREATE TABLE heron_extra (a int); SELECT 1/0;")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            migrate(conn, broken, TABLE)
        assert schema_version(conn, TABLE) == len(POSTGRES_MIGRATIONS)
        assert conn.execute("SELECT to_regclass('heron_extra')").fetchone() == (None,)
        fixed = (*POSTGRES_MIGRATIONS, "CREATE TABLE heron_extra (a int);")
        assert migrate(conn, fixed, TABLE) == len(fixed)
        assert migrate(conn, fixed, TABLE) == len(fixed)
        with pytest.raises(StoreError, match="newer than this Heron"):
            migrate(conn, POSTGRES_MIGRATIONS, TABLE)


def _terminate(url: str, database: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid() AND application_name <> 'keep'",
            (database,),
        ).fetchall()
    return len(rows)


def test_lost_connections_are_replaced(pg: PostgresStore) -> None:
    pg.upsert("k8s", DOCS)
    database = pg.url.rsplit("/", 1)[1]
    assert _terminate(pg.url, database) >= 1
    assert pg.search("k8s", "password", mode="hybrid")[0].id == "secrets"
    _terminate(pg.url, database)
    pg.upsert("k8s", [Record("new", "a fresh record after the reconnect")])
    assert pg.count("k8s") == 6


def test_connection_lost_mid_write_leaves_no_half_batch(pg: PostgresStore) -> None:
    pg.upsert("k8s", DOCS)
    batch = [Record(f"n{i}", f"note number {i}") for i in range(20)]
    batch[10] = Record("pods", "Pods, rewritten while another transaction holds the row.")
    blocker = psycopg.connect(pg.url, application_name="keep")
    blocker.execute(
        "SELECT 1 FROM heron_records WHERE id = 'pods' FOR UPDATE"
    )  # the write waits here
    result: list[object] = []
    writer = threading.Thread(target=lambda: result.append(pg.upsert("k8s", batch)))
    writer.start()
    database = pg.url.rsplit("/", 1)[1]
    deadline = time.monotonic() + 20
    with psycopg.connect(pg.url, autocommit=True, application_name="keep") as watch:
        while time.monotonic() < deadline:
            waiting = watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = "
                "'Lock' AND application_name <> 'keep'",
                (database,),
            ).fetchone()
            if waiting and waiting[0]:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the write never reached the locked row")
        assert _terminate(pg.url, database) >= 1  # kills the half-done transaction
        # The first ten notes were inserted before the lock: none of them is visible.
        assert watch.execute(
            "SELECT count(*) FROM heron_records WHERE id LIKE 'n%%'"
        ).fetchone() == (0,)
    blocker.rollback()  # the retried write now goes through, whole
    blocker.close()
    writer.join(timeout=30)
    assert result and pg.count("k8s") == 5 + 19
    assert pg.get("k8s", "pods").text.startswith("Pods, rewritten")
    kept, true = _counters(pg.url, "k8s")
    assert kept == true


def test_unreachable_server_is_a_clear_error(embedder: MiniLMEmbedder) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://heron:secret-password@127.0.0.1:{port}/heron"
    with pytest.raises(StoreError, match="scripts/postgres start") as caught:
        postgres_store(url, embedder, timeout=2)
    assert "secret-password" not in str(caught.value)
    assert f"127.0.0.1:{port}/heron" in str(caught.value)


def test_database_refusing_connections_is_reported_then_recovered(
    pg_url: str,  # noqa: F811
    embedder: MiniLMEmbedder,
) -> None:
    store = postgres_store(pg_url, embedder, timeout=2)
    store.upsert("k8s", DOCS)
    database = pg_url.rsplit("/", 1)[1]
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
    _terminate(admin, database)
    with pytest.raises(StoreError, match=r"The PostgreSQL store at .* failed"):
        store.search("k8s", "password")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    assert store.search("k8s", "password")[0].id == "secrets"
    store.close()


def test_open_store_picks_postgres_from_the_url(
    pg_url: str,  # noqa: F811
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: MiniLMEmbedder,
) -> None:
    monkeypatch.setenv("HERON_DATABASE_URL", pg_url)
    store = open_store(Settings(), embedder)
    assert isinstance(store, PostgresStore)
    store.close()
    monkeypatch.setenv("HERON_DATABASE_URL", f"sqlite:///{home / 'x.db'}")
    assert isinstance(open_store(Settings(), embedder), SQLiteStore)


def test_parity_command(
    pg_url: str,  # noqa: F811
    home: Path,
    tmp_path: Path,
    embedder: MiniLMEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with sqlite_store(Settings().db_path, embedder) as sqlite:
        sqlite.upsert("k8s", DOCS)
    with postgres_store(pg_url, embedder) as postgres:
        postgres.upsert("k8s", DOCS)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "1", "text": "password"}\n{"id": "2", "text": "kubectl"}\n')
    monkeypatch.setenv("HERON_DATABASE_URL", pg_url)
    done = run_heron("store", "parity", "k8s", "--queries", str(queries), "--json")
    report = json.loads(done.stdout)
    assert report["overlap"] == {"dense": 1.0, "lexical": 1.0, "hybrid": 1.0}
    assert report["queries"] == 2
    monkeypatch.delenv("HERON_DATABASE_URL")
    missing = run_heron("store", "parity", "k8s", "--queries", str(queries), ok=False)
    assert missing.returncode != 0 and "postgresql://" in missing.stderr
