from __future__ import annotations

import json
import multiprocessing
import sqlite3
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from heron.embed import MiniLMEmbedder, RemoteEmbedder
from heron.errors import (
    DatabaseBusy,
    DatabaseCorrupt,
    DatabaseReadOnly,
    InputError,
    NamespaceMismatch,
    NotFound,
    StoreError,
)
from heron.settings import Settings
from heron.sqlite_errors import SQLiteFile
from heron.store import Record, SQLiteStore, check_store
from heron.store import vectors as vector_indexes
from tests.openai_server import serve

DOCS = [
    Record(
        "pods",
        "A Pod is the smallest deployable unit; it runs one or more containers.",
        {"collection": "concepts", "title": "Pods"},
    ),
    Record(
        "rollback",
        "Roll back a Deployment to a previous revision with kubectl rollout undo.",
        {"collection": "tasks", "title": "Rolling back"},
    ),
    Record(
        "secrets",
        "A Secret holds a small amount of sensitive data such as a password or token.",
        {"collection": "concepts", "title": "Secrets"},
    ),
    Record(
        "cron",
        "A CronJob creates Jobs on a repeating schedule written in cron format.",
        {"collection": "concepts", "title": "CronJob"},
    ),
    Record(
        "scale",
        "Scale a StatefulSet by changing its replicas field with kubectl scale.",
        {"collection": "tasks", "title": "Scaling"},
    ),
]


def test_upsert_get_count_ids(store: SQLiteStore) -> None:
    result = store.upsert("k8s", DOCS)
    assert (result.added, result.updated, result.unchanged) == (5, 0, 0)
    assert store.count("k8s") == 5
    assert store.ids("k8s") == sorted(r.id for r in DOCS)
    record = store.get("k8s", "pods")
    assert record.metadata == {"collection": "concepts", "title": "Pods"}
    assert record.vector is not None and record.vector.shape == (384,)


def test_second_upsert_of_same_records_embeds_nothing(
    store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    store.upsert("k8s", DOCS)
    calls = embedder.calls
    result = store.upsert("k8s", DOCS)
    assert (result.added, result.updated, result.unchanged) == (0, 0, 5)
    assert embedder.calls == calls


def test_changed_record_is_updated_and_found(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    result = store.upsert("k8s", [Record("cron", "Heron feathers are grey and white.", {})])
    assert (result.added, result.updated) == (0, 1)
    assert store.search("k8s", "grey feathers of a heron", top_k=1)[0].id == "cron"
    assert store.get("k8s", "cron").metadata == {}


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_each_mode_finds_the_obvious_record(store: SQLiteStore, mode: str) -> None:
    store.upsert("k8s", DOCS)
    hits = store.search("k8s", "undo a deployment rollout", mode=mode, top_k=3)
    assert hits[0].id == "rollback"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in pairwise(hits))


def test_hits_expose_component_scores_and_ranks(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    top = store.search("k8s", "kubectl rollout undo deployment", mode="hybrid", top_k=5)[0]
    assert top.dense_rank == 1 and top.lexical_rank == 1
    assert 0 < top.dense_score <= 1 and top.lexical_score > 0
    dense = store.search("k8s", "kubectl rollout undo", mode="dense")[0]
    assert dense.lexical_score is None and dense.score == dense.dense_score
    lexical = store.search("k8s", "kubectl rollout undo", mode="lexical")[0]
    assert lexical.dense_score is None and lexical.score == lexical.lexical_score


def test_lexical_uses_stemming_and_ignores_stopwords(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    assert store.search("k8s", "the scaling of replicas", mode="lexical")[0].id == "scale"
    assert store.search("k8s", "the of and", mode="lexical") == []


def test_filters(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    for mode in ("dense", "lexical", "hybrid"):
        hits = store.search("k8s", "kubectl", mode=mode, filters={"collection": "tasks"})
        assert hits and {h.metadata["collection"] for h in hits} == {"tasks"}
    either = store.search(
        "k8s", "data", mode="dense", filters={"collection": ["tasks", "concepts"]}
    )
    assert len(either) == 5
    assert store.search("k8s", "kubectl", filters={"collection": "nope"}) == []
    with pytest.raises(InputError, match="Invalid filter field"):
        store.search("k8s", "x", filters={"a'); DROP TABLE records; --": 1})


def test_delete_removes_from_every_search(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    assert store.delete("k8s", ["rollback", "missing"]) == 1
    for mode in ("dense", "lexical", "hybrid"):
        assert "rollback" not in [h.id for h in store.search("k8s", "rollout undo", mode=mode)]
    with pytest.raises(NotFound):
        store.get("k8s", "rollback")


def test_search_many_matches_single_searches(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    queries = ["sensitive password", "repeating schedule"]
    many = store.search_many("k8s", queries, top_k=2)
    assert [[h.id for h in hits] for hits in many] == [
        [h.id for h in store.search("k8s", q, top_k=2)] for q in queries
    ]


def test_key_value_state(store: SQLiteStore) -> None:
    store.kv_set("k8s", "page:a", "hash1")
    store.kv_set("k8s", "page:a", "hash2")
    store.kv_set("k8s", "page:b", "hash3")
    store.kv_set("k8s", "other", "x")
    assert store.kv_get("k8s", "page:a") == "hash2"
    assert store.kv_items("k8s", "page:") == {"page:a": "hash2", "page:b": "hash3"}
    store.kv_delete("k8s", "page:a")
    assert store.kv_get("k8s", "page:a") is None


def test_bad_records_are_rejected_and_nothing_is_written(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS[:1])
    nan = np.full(384, np.nan, dtype=np.float32)
    for bad, message in [
        (Record("x", "t", {}, vector=nan), "NaN or infinity"),
        (Record("x", "t", {}, vector=np.ones(3)), "shape"),
        (Record("x", "t", {}, vector=np.zeros(384)), "zero vector"),
        (Record("", "t"), "non-empty string"),
        (Record("x", None), "text must be a string"),  # type: ignore[arg-type]
        (Record("x", "t", ["not", "a", "dict"]), "JSON object"),  # type: ignore[arg-type]
    ]:
        with pytest.raises(InputError, match=message):
            store.upsert("k8s", [DOCS[1], bad])
    assert store.ids("k8s") == ["pods"]


def test_given_vectors_skip_the_embedder(store: SQLiteStore, embedder: MiniLMEmbedder) -> None:
    vector = embedder.embed(["custom vector"])[0] * 3  # any length: the store normalises
    calls = embedder.calls
    store.upsert("k8s", [Record("v", "text that is not embedded", {}, vector=vector)])
    assert embedder.calls == calls
    np.testing.assert_allclose(store.get("k8s", "v").vector, vector / 3, atol=1e-6)


def test_empty_and_huge_texts(store: SQLiteStore) -> None:
    store.upsert("k8s", [Record("empty", ""), Record("huge", "node " * 50_000)])
    assert store.count("k8s") == 2
    assert store.search("k8s", "node", mode="lexical")[0].id == "huge"


def test_namespace_of_another_model_is_refused(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    SQLiteStore(tmp_path / "h.db", embedder).upsert("k8s", DOCS[:1])
    with serve(dim=8) as (url, _):
        other = SQLiteStore(tmp_path / "h.db", RemoteEmbedder(url, "other-model"))
        with pytest.raises(NamespaceMismatch, match="heron store drop k8s"):
            other.search("k8s", "pods")
        with pytest.raises(NamespaceMismatch, match="384 dims"):
            other.upsert("k8s", [Record("b", "text")])
        other.drop("k8s")
        other.upsert("k8s", [Record("b", "text")])
        assert other.get("k8s", "b").vector.shape == (8,)


def test_unknown_namespace_and_mode(store: SQLiteStore) -> None:
    with pytest.raises(NotFound, match="No namespace 'nope'"):
        store.search("nope", "x")
    store.upsert("k8s", DOCS[:1])
    with pytest.raises(InputError, match="Choose from: dense, lexical, hybrid"):
        store.search("k8s", "x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="Invalid namespace"):
        store.upsert("../etc", DOCS[:1])


def test_drop_forgets_everything(store: SQLiteStore) -> None:
    store.upsert("k8s", DOCS)
    store.kv_set("k8s", "a", "b")
    store.drop("k8s")
    assert store.namespaces() == []
    assert store.kv_get("k8s", "a") is None


def test_corrupt_database_file_is_reported(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    path = tmp_path / "heron.db"
    path.write_bytes(b"this is not a database" * 200)
    fix = r"is corrupt .* move it aside .*\(mv .*\); then rebuild it: heron index"
    with pytest.raises(StoreError, match=fix):
        SQLiteStore(path, embedder)


def test_second_store_sees_writes_of_the_first(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    a = SQLiteStore(tmp_path / "h.db", embedder)
    b = SQLiteStore(tmp_path / "h.db", embedder)
    a.upsert("k8s", DOCS[:2])
    assert {h.id for h in b.search("k8s", "pods", mode="dense")} == {"pods", "rollback"}
    a.upsert("k8s", DOCS[2:])
    a.delete("k8s", ["pods"])
    assert {h.id for h in b.search("k8s", "pods", mode="dense")} == {r.id for r in DOCS[1:]}


def test_hnsw_index_is_used_saved_and_kept_in_sync(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_indexes, "EXACT_LIMIT", 50)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((120, 384)).astype(np.float32)
    records = [Record(f"r{i}", f"record {i}", {}, vector=v) for i, v in enumerate(vectors)]
    store = SQLiteStore(tmp_path / "h.db", embedder)
    store.upsert("big", records)
    target = vectors[7] / np.linalg.norm(vectors[7])
    assert store.search("big", "", mode="dense", vector=target, top_k=1)[0].id == "r7"
    assert isinstance(store._indexes["big"][0], vector_indexes.HnswIndex)
    assert (tmp_path / "h.db.vectors").is_dir()
    store.delete("big", ["r7"])
    assert store.search("big", "", mode="dense", vector=target, top_k=1)[0].id != "r7"
    reopened = SQLiteStore(tmp_path / "h.db", embedder)
    assert reopened.search("big", "", mode="dense", vector=target, top_k=1)[0].id != "r7"
    assert reopened.count("big") == 119


def _writer(path: str, worker: int, count: int) -> None:
    store = SQLiteStore(Path(path), MiniLMEmbedder(Settings().models_dir, threads=1))
    for i in range(count):
        vector = np.random.default_rng(worker * 1000 + i).standard_normal(384)
        store.upsert(
            "shared", [Record(f"w{worker}-{i}", f"worker {worker} item {i}", {}, vector=vector)]
        )
        store.kv_set("shared", f"w{worker}-{i}", "done")


def test_two_processes_writing_at_once_lose_nothing(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = tmp_path / "h.db"
    SQLiteStore(path, embedder).upsert("shared", [Record("seed", "seed")])
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), w, 40)) for w in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    store = SQLiteStore(path, embedder)
    assert store.count("shared") == 81
    assert len(store.kv_items("shared", "w")) == 80
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM fts_1").fetchone() == (81,)
    assert len(store.search("shared", "worker item", mode="dense", top_k=100)) == 81


def test_metadata_round_trips_as_json(store: SQLiteStore) -> None:
    meta = {"collection": "c", "tags": ["a", "b"], "nested": {"x": 1}, "unicode": "héron"}
    store.upsert("k8s", [Record("m", "text", meta)])
    assert store.get("k8s", "m").metadata == json.loads(json.dumps(meta))


def test_drop_clears_state_of_a_namespace_without_records(store: SQLiteStore) -> None:
    store.kv_set("pending", "page:a", "h")
    store.drop("pending")
    assert store.kv_get("pending", "page:a") is None
    with pytest.raises(NotFound):
        store.drop("pending")


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
    store = SQLiteStore(path, embedder)
    store.upsert("k8s", DOCS)
    store.check()  # a sound file passes
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = db.execute("SELECT min(pageno) FROM dbstat WHERE name = 'fts_1_data'").fetchone()
    with path.open("r+b") as f:
        f.seek((page - 1) * 4096)
        f.write(b"\xa5" * 4096)
    store = SQLiteStore(path, embedder)
    assert store.count("k8s") == len(DOCS)  # the damage is where this query does not look
    with pytest.raises(DatabaseCorrupt, match=rf"{path} is corrupt .* \(mv {path} {path}\.bad\)"):
        check_store(store)
    store.close()
