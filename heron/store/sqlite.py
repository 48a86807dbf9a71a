"""The embedded backend: one SQLite file (WAL), FTS5 for words, an in-memory vector index.

SQLite is the source of truth: records, their float32 vectors, and a per-namespace
sequence number bumped by every write. The vector index is a cache rebuilt from it:
each record carries the ``seq`` of the write that made it and each delete leaves a
tombstone, so a process brings its index up to date by reading what changed since the
``seq`` it last saw. That is how several processes share one file without a server.
Large HNSW indexes are saved next to the database so a restart does not rebuild them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from heron.embed.base import Embedder, check_vectors
from heron.errors import InputError, NotFound
from heron.sqlite_errors import SQLiteFile
from heron.store import vectors as vector_indexes
from heron.store.analysis import analyze
from heron.store.base import (
    Filters,
    Hit,
    NamespaceInfo,
    Progress,
    Record,
    SearchMode,
    UpsertResult,
)
from heron.store.fusion import Fused, fuse_with_feedback
from heron.store.shared import (
    BATCH,
    CANDIDATES,
    FIELD_WEIGHTS,
    batched,
    check_field,
    check_model,
    check_namespace_name,
    check_record,
    check_search,
    no_namespace,
    query_terms,
    record_vectors,
)
from heron.store.vectors import ExactIndex, HnswIndex, VectorIndex, choose_index

#: How a store moved aside comes back (the end of a ``DatabaseCorrupt`` message).
REBUILD = (
    "rebuild it: heron index && heron skills index (and heron store load again for the "
    "namespaces you loaded yourself)"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS namespaces (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    model_id TEXT NOT NULL,
    dim INTEGER NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS records (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    seq INTEGER NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX IF NOT EXISTS records_seq ON records (namespace_id, seq);
CREATE TABLE IF NOT EXISTS tombstones (
    namespace_id INTEGER NOT NULL,
    key INTEGER NOT NULL,
    seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tombstones_seq ON tombstones (namespace_id, seq);
CREATE TABLE IF NOT EXISTS kv (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"""


def _fts_query(text: str) -> str | None:
    """``"pod" OR "run"``: analysed terms, deduplicated. Terms are ``\\w+``, safe to quote."""
    return " OR ".join(f'"{t}"' for t in query_terms(text)) or None


class SQLiteStore:
    """``Store`` on one SQLite file. Safe to share between threads and processes.

    >>> store = SQLiteStore(Path("heron.db"), embedder)          # doctest: +SKIP
    >>> store.upsert("docs", [Record("a", "Pods run containers")])  # doctest: +SKIP
    >>> store.search("docs", "what runs a container?")[0].id     # doctest: +SKIP
    'a'
    """

    def __init__(self, path: Path, embedder: Embedder) -> None:
        self.path = Path(path)
        self.embedder = embedder
        self._file = SQLiteFile(self.path, "the store", REBUILD)
        self._lock = threading.RLock()
        # Hybrid search runs its FTS5 query on a second connection in a worker thread while
        # this one does the dense side: SQLite and usearch release the GIL, so the two
        # sides take the time of the slower one, not the sum (WAL allows both readers).
        self._side: sqlite3.Connection | None = None
        self._side_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._indexes: dict[str, tuple[VectorIndex, int]] = {}
        self._db = self._file.connect(
            timeout=60, schema=_SCHEMA, pragmas=("synchronous=NORMAL", "foreign_keys=ON")
        )

    def check(self) -> None:
        """Read every page of the file and raise ``DatabaseCorrupt`` if one is damaged,
        rather than leave it to the query that meets the damage (``PRAGMA quick_check``)."""
        with self._lock:
            self._file.quick_check(self._db)

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the lock up front so two writers
        queue instead of failing with 'database is locked' half-way."""
        with self._lock, self._file.transaction(self._db) as db:
            yield db

    def _read(
        self, sql: str, params: Sequence[Any] = (), *, side: bool = False
    ) -> list[tuple[Any, ...]]:
        if side:
            with self._side_lock, self._file.errors():
                if self._side is None:
                    self._side = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
                return self._side.execute(sql, params).fetchall()
        with self._lock, self._file.errors():
            return self._db.execute(sql, params).fetchall()

    # -- namespaces ---------------------------------------------------------------------

    def namespaces(self) -> list[NamespaceInfo]:
        rows = self._read(
            "SELECT n.name, n.model_id, n.dim, count(r.key) FROM namespaces n "
            "LEFT JOIN records r ON r.namespace_id = n.id GROUP BY n.id ORDER BY n.name"
        )
        return [NamespaceInfo(*row) for row in rows]

    def _namespace(self, name: str) -> tuple[int, str, int, int]:
        """``(id, model_id, dim, seq)`` of an existing namespace, checked against the model."""
        rows = self._read("SELECT id, model_id, dim, seq FROM namespaces WHERE name = ?", (name,))
        if not rows:
            raise no_namespace(name, [info.name for info in self.namespaces()])
        ns_id, model_id, dim, seq = rows[0]
        check_model(name, model_id, dim, self.embedder)
        return ns_id, model_id, dim, seq

    def _ensure_namespace(self, name: str) -> int:
        check_namespace_name(name)
        with self._write() as db:
            db.execute(
                "INSERT INTO namespaces (name, model_id, dim) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO NOTHING",
                (name, self.embedder.model_id, self.embedder.dim),
            )
            (ns_id,) = db.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
            db.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{ns_id} USING fts5("
                "title, body, tokenize = 'unicode61 remove_diacritics 2')"
            )
        self._namespace(name)  # refuses a namespace of another model
        return ns_id

    def count(self, namespace: str) -> int:
        ns_id = self._namespace(namespace)[0]
        return self._read("SELECT count(*) FROM records WHERE namespace_id = ?", (ns_id,))[0][0]

    def ids(self, namespace: str) -> list[str]:
        ns_id = self._namespace(namespace)[0]
        rows = self._read("SELECT id FROM records WHERE namespace_id = ? ORDER BY id", (ns_id,))
        return [row[0] for row in rows]

    def drop(self, namespace: str) -> None:
        """Delete the namespace's records, index and key-value state (state may exist
        before any record does, so it goes even when the namespace has no records)."""
        rows = self._read("SELECT id FROM namespaces WHERE name = ?", (namespace,))
        if not rows:
            with self._write() as db:
                gone = db.execute("DELETE FROM kv WHERE namespace = ?", (namespace,)).rowcount
            if not gone:
                raise NotFound(f"No namespace {namespace!r}.")
            return
        ns_id = rows[0][0]
        with self._write() as db:
            for table in ("records", "tombstones"):
                db.execute(f"DELETE FROM {table} WHERE namespace_id = ?", (ns_id,))
            db.execute("DELETE FROM kv WHERE namespace = ?", (namespace,))
            db.execute(f"DROP TABLE IF EXISTS fts_{ns_id}")
            db.execute("DELETE FROM namespaces WHERE id = ?", (ns_id,))
        self._indexes.pop(namespace, None)
        for path in self._index_files(ns_id):
            path.unlink(missing_ok=True)

    # -- writes -------------------------------------------------------------------------

    def upsert(
        self, namespace: str, records: Iterable[Record], *, progress: Progress | None = None
    ) -> UpsertResult:
        """Add or replace records by id, in transactions of ``BATCH`` records.

        Records whose content hash is unchanged are skipped before embedding, so
        loading the same file twice embeds nothing the second time.
        """
        ns_id = self._ensure_namespace(namespace)
        added = updated = unchanged = 0
        for batch in batched(records, BATCH):
            a, u, n = self._upsert_batch(ns_id, batch)
            added, updated, unchanged = added + a, updated + u, unchanged + n
            if progress:
                progress(len(batch))
        return UpsertResult(added, updated, unchanged)

    def _upsert_batch(self, ns_id: int, batch: list[Record]) -> tuple[int, int, int]:
        latest = {check_record(r).id: r for r in batch}  # a repeated id: the last one wins
        hashes = {rid: r.content_hash() for rid, r in latest.items()}
        marks = ",".join("?" * len(latest))
        stored = dict(
            self._read(
                f"SELECT id, hash FROM records WHERE namespace_id = ? AND id IN ({marks})",
                (ns_id, *latest),
            )
        )
        todo = [r for rid, r in latest.items() if stored.get(rid) != hashes[rid]]
        if not todo:
            return 0, 0, len(batch)
        vectors = record_vectors(self.embedder, todo)
        with self._write() as db:
            (seq,) = db.execute(
                "UPDATE namespaces SET seq = seq + 1 WHERE id = ? RETURNING seq", (ns_id,)
            ).fetchone()
            for record, vector in zip(todo, vectors, strict=True):
                (key,) = db.execute(
                    "INSERT INTO records (namespace_id, id, text, metadata, hash, vector, seq) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace_id, id) DO UPDATE SET "
                    "text = excluded.text, metadata = excluded.metadata, hash = excluded.hash, "
                    "vector = excluded.vector, seq = excluded.seq RETURNING key",
                    (
                        ns_id,
                        record.id,
                        record.text,
                        json.dumps(record.metadata),
                        hashes[record.id],
                        vector.tobytes(),
                        seq,
                    ),
                ).fetchone()
                db.execute(f"DELETE FROM fts_{ns_id} WHERE rowid = ?", (key,))
                db.execute(
                    f"INSERT INTO fts_{ns_id} (rowid, title, body) VALUES (?, ?, ?)",
                    (
                        key,
                        " ".join(analyze(str(record.metadata.get("title", "")))),
                        " ".join(analyze(record.text)),
                    ),
                )
        updated = sum(1 for r in todo if r.id in stored)
        return len(todo) - updated, updated, len(batch) - len(todo)

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        ns_id = self._namespace(namespace)[0]
        ids = list(ids)
        if not ids:
            return 0
        with self._write() as db:
            (seq,) = db.execute(
                "UPDATE namespaces SET seq = seq + 1 WHERE id = ? RETURNING seq", (ns_id,)
            ).fetchone()
            keys = []
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                deleted = db.execute(
                    f"DELETE FROM records WHERE namespace_id = ? AND id IN ({marks}) RETURNING key",
                    (ns_id, *part),
                )
                keys += [row[0] for row in deleted]
            db.executemany(f"DELETE FROM fts_{ns_id} WHERE rowid = ?", [(k,) for k in keys])
            db.executemany(
                "INSERT INTO tombstones (namespace_id, key, seq) VALUES (?, ?, ?)",
                [(ns_id, k, seq) for k in keys],
            )
        return len(keys)

    # -- reads --------------------------------------------------------------------------

    def get(self, namespace: str, id: str) -> Record:
        ns_id = self._namespace(namespace)[0]
        rows = self._read(
            "SELECT text, metadata, vector FROM records WHERE namespace_id = ? AND id = ?",
            (ns_id, id),
        )
        if not rows:
            raise NotFound(f"No record {id!r} in namespace {namespace!r}.")
        text, metadata, blob = rows[0]
        return Record(id, text, json.loads(metadata), np.frombuffer(blob, dtype=np.float32))

    def search(
        self,
        namespace: str,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
        filters: Filters | None = None,
        vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """The ``top_k`` best records for ``query``; ``vector`` skips embedding the query."""
        vectors = None if vector is None else np.reshape(vector, (1, -1))
        return self.search_many(
            namespace, [query], mode=mode, top_k=top_k, filters=filters, vectors=vectors
        )[0]

    def search_many(
        self,
        namespace: str,
        queries: Sequence[str],
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
        filters: Filters | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[list[Hit]]:
        """``search`` for many queries at once: the queries are embedded in one batch."""
        check_search(mode, top_k)
        ns_id, _, dim, _ = self._namespace(namespace)
        allowed = self._filtered_keys(ns_id, filters) if filters else None
        if mode != "lexical":
            if vectors is None:
                vectors = self.embedder.embed(list(queries))
            vectors = check_vectors(vectors, dim, "query vectors")
            index = self._vector_index(namespace)
        results = []
        for i, query in enumerate(queries):
            if mode == "dense":
                keys, scores = index.search(vectors[i], top_k, allowed)
                fused = [
                    Fused(int(k), float(s), float(s), None, r, None)
                    for r, (k, s) in enumerate(zip(keys, scores, strict=True), 1)
                ]
            elif mode == "lexical":
                keys, scores = self._lexical(ns_id, query, top_k, filters)
                fused = [
                    Fused(int(k), float(s), None, float(s), None, r)
                    for r, (k, s) in enumerate(zip(keys, scores, strict=True), 1)
                ]
            else:
                fused = self._hybrid(ns_id, index, query, vectors[i], top_k, allowed, filters)
            results.append(self._hits(fused))
        return results

    def _hybrid(
        self,
        ns_id: int,
        index: VectorIndex,
        query: str,
        vector: np.ndarray,
        top_k: int,
        allowed: np.ndarray | None,
        filters: Filters | None,
    ) -> list[Fused]:
        """Both sides' candidates, each scored exactly on both sides, fused (see fusion.py)."""
        depth = max(CANDIDATES, top_k)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="heron-lexical")
        lexical = self._pool.submit(self._lexical, ns_id, query, depth, filters, side=True)
        dense_keys, _ = index.search(vector, depth, allowed)
        # fuse() ignores the fill of keys the lexical list has, so score all dense keys
        # now rather than wait for that list.
        lexical_fill = self._bm25_of(ns_id, query, dense_keys)
        vectors = dict(zip(dense_keys.tolist(), index.vectors(dense_keys), strict=True))
        lexical_keys, lexical_scores = lexical.result()
        # A record another process wrote after the index caught up is in FTS5 but not yet
        # in the index; it joins the next search.
        known = np.array([key in index for key in lexical_keys.tolist()], dtype=bool)
        lexical_keys, lexical_scores = lexical_keys[known], lexical_scores[known]
        only_lexical = np.setdiff1d(lexical_keys, dense_keys)
        vectors.update(zip(only_lexical.tolist(), index.vectors(only_lexical), strict=True))
        return fuse_with_feedback(
            vector,
            vectors,
            dense_keys,
            lexical_keys,
            lexical_scores,
            top_k=top_k,
            lexical_fill=lexical_fill,
        )

    def _bm25_of(self, ns_id: int, query: str, keys: np.ndarray) -> dict[int, float]:
        """Exact BM25 of given records; 0.0 for those the query's terms do not match."""
        scores = dict.fromkeys(keys.tolist(), 0.0)
        match = _fts_query(query)
        if match is None or not keys.size:
            return scores
        weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
        marks = ",".join("?" * keys.size)
        # The unary + keeps SQLite from pushing "rowid IN" into FTS5, which would run one
        # full-text query per key (55 ms for 200 keys on SciFact, against 1 ms).
        rows = self._read(
            f"SELECT rowid, -bm25(fts_{ns_id}, {weights}) FROM fts_{ns_id} "
            f"WHERE fts_{ns_id} MATCH ? AND +rowid IN ({marks})",
            (match, *keys.tolist()),
        )
        scores.update(rows)
        return scores

    def _lexical(
        self, ns_id: int, query: str, k: int, filters: Filters | None, *, side: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        match = _fts_query(query)
        if match is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
        where, params = _filter_sql(filters)
        sql = (
            f"SELECT f.rowid, -bm25(fts_{ns_id}, {weights}) AS s FROM fts_{ns_id} f "
            + ("JOIN records r ON r.key = f.rowid " if where else "")
            + f"WHERE fts_{ns_id} MATCH ? {where} ORDER BY s DESC, f.rowid LIMIT ?"
        )
        rows = self._read(sql, (match, *params, k), side=side)
        keys = np.array([row[0] for row in rows], dtype=np.int64)
        return keys, np.array([row[1] for row in rows], dtype=np.float32)

    def _filtered_keys(self, ns_id: int, filters: Filters) -> np.ndarray:
        where, params = _filter_sql(filters)
        rows = self._read(
            f"SELECT key FROM records r WHERE namespace_id = ? {where}", (ns_id, *params)
        )
        return np.array([row[0] for row in rows], dtype=np.int64)

    def _hits(self, fused: list[Fused]) -> list[Hit]:
        if not fused:
            return []
        marks = ",".join("?" * len(fused))
        rows = self._read(
            f"SELECT key, id, text, metadata FROM records WHERE key IN ({marks})",
            [f.key for f in fused],
        )
        by_key = {key: (rid, text, meta) for key, rid, text, meta in rows}
        hits = []
        for f in fused:
            if f.key not in by_key:  # deleted by another process since the index caught up
                continue
            rid, text, meta = by_key[f.key]
            hits.append(
                Hit(
                    rid,
                    f.score,
                    text,
                    json.loads(meta),
                    len(hits) + 1,
                    f.dense_score,
                    f.lexical_score,
                    f.dense_rank,
                    f.lexical_rank,
                )
            )
        return hits

    # -- the vector index cache ---------------------------------------------------------

    def _index_files(self, ns_id: int) -> tuple[Path, Path]:
        folder = self.path.with_name(self.path.name + ".vectors")
        return folder / f"{ns_id}.usearch", folder / f"{ns_id}.json"

    def _vector_index(self, namespace: str) -> VectorIndex:
        """The namespace's index, brought up to date with writes from any process."""
        with self._lock:
            ns_id, model_id, dim, seq = self._namespace(namespace)
            index, seen = self._indexes.get(namespace) or self._load_index(ns_id, model_id, dim)
            if seen != seq:
                index = self._catch_up(ns_id, dim, index, seen)
                if isinstance(index, HnswIndex) and len(index) > vector_indexes.EXACT_LIMIT:
                    self._save_index(ns_id, model_id, index, seq)
            self._indexes[namespace] = (index, seq)
            return index

    def _load_index(self, ns_id: int, model_id: str, dim: int) -> tuple[VectorIndex, int]:
        graph, meta = self._index_files(ns_id)
        try:
            saved = json.loads(meta.read_text())
            if saved["model_id"] == model_id:
                return HnswIndex(dim, graph), int(saved["seq"])
        except (OSError, ValueError, KeyError, RuntimeError):
            pass  # no saved index, or a damaged one: rebuild from the records
        size = self._read("SELECT count(*) FROM records WHERE namespace_id = ?", (ns_id,))[0][0]
        return choose_index(dim, size), 0

    def _catch_up(self, ns_id: int, dim: int, index: VectorIndex, seen: int) -> VectorIndex:
        gone = self._read(
            "SELECT key FROM tombstones WHERE namespace_id = ? AND seq > ?", (ns_id, seen)
        )
        index.remove(np.array([row[0] for row in gone], dtype=np.int64))
        rows = self._read(
            "SELECT key, vector FROM records WHERE namespace_id = ? AND seq > ?", (ns_id, seen)
        )
        if rows:
            keys = np.array([row[0] for row in rows], dtype=np.int64)
            vectors = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
            index.add(keys, vectors.reshape(len(rows), dim))
        if isinstance(index, ExactIndex) and len(index) > vector_indexes.EXACT_LIMIT:
            return self._catch_up(ns_id, dim, HnswIndex(dim), 0)
        return index

    def _save_index(self, ns_id: int, model_id: str, index: HnswIndex, seq: int) -> None:
        graph, meta = self._index_files(ns_id)
        graph.parent.mkdir(exist_ok=True)
        index.save(graph)
        meta.write_text(json.dumps({"seq": seq, "model_id": model_id}))

    # -- key-value state ----------------------------------------------------------------

    def kv_get(self, namespace: str, key: str) -> str | None:
        rows = self._read("SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key))
        return rows[0][0] if rows else None

    def kv_set(self, namespace: str, key: str, value: str) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO kv VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET value = excluded.value",
                (namespace, key, value),
            )

    def kv_items(self, namespace: str, prefix: str = "") -> dict[str, str]:
        rows = self._read(
            "SELECT key, value FROM kv WHERE namespace = ? AND substr(key, 1, ?) = ? ORDER BY key",
            (namespace, len(prefix), prefix),
        )
        return dict(rows)

    def kv_delete(self, namespace: str, key: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        with self._side_lock:
            if self._side is not None:
                self._side.close()
        with self._lock:
            self._db.close()


def _filter_sql(filters: Filters | None) -> tuple[str, list[Any]]:
    """``{"collection": "tasks", "tags": ["a", "b"]}`` -> SQL on ``r.metadata``.

    A scalar means equality, a list means any of its values.
    """
    if not filters:
        return "", []
    clauses, params = [], []
    for field_name, value in filters.items():
        check_field(field_name)
        path = f"$.{field_name}"
        values = value if isinstance(value, list | tuple) else [value]
        if not values:
            raise InputError(f"Filter {field_name!r} lists no values.")
        marks = ",".join("?" * len(values))
        clauses.append(f"AND json_extract(r.metadata, ?) IN ({marks})")
        params += [path, *values]
    return " ".join(clauses), params
