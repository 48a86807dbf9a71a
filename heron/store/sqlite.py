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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from heron.db import SQLiteDatabase
from heron.embed.base import Embedder
from heron.store import vectors as vector_indexes
from heron.store.analysis import analyze, query_terms
from heron.store.base import NamespaceInfo
from heron.store.schema import languages_sql
from heron.store.sql import FIELD_WEIGHTS, Row, SQLStore
from heron.store.validate import FilterTerms, check_model, no_namespace
from heron.store.vectors import ExactIndex, HnswIndex, VectorIndex, choose_index


def _fts_query(text: str, languages: tuple[str, ...]) -> str | None:
    """``"pod" OR "run"``: analysed terms (as each of the namespace's ``languages``),
    deduplicated. Terms are ``\\w+``, safe to quote."""
    return " OR ".join(f'"{t}"' for t in query_terms(text, languages)) or None


@dataclass(frozen=True)
class _Scope:
    """One search's namespace, its filter as SQL on ``r.metadata``, the languages its
    records are analysed in (a query is analysed in each), and for dense searches the
    vector index with the keys the filter lets through."""

    ns_id: int
    where: str
    params: list[Any]
    languages: tuple[str, ...]
    index: VectorIndex | None
    allowed: np.ndarray | None


class SQLiteStore(SQLStore[_Scope]):
    """``Store`` on one SQLite file. Safe to share between threads and processes.

    Built on the file ``heron.db.open_database`` opened for ``heron.store.schema.STORE``,
    which it owns: ``close()`` closes it. ``heron.store.open_store`` opens both::

    >>> store = open_store(settings, embedder)                      # doctest: +SKIP
    >>> store.upsert("docs", [Record("a", "Pods run containers")])  # doctest: +SKIP
    >>> store.search("docs", "what runs a container?")[0].id        # doctest: +SKIP
    'a'
    """

    def __init__(self, database: SQLiteDatabase, embedder: Embedder) -> None:
        super().__init__(embedder)
        self._database = database
        self.path = database.path
        self.where = str(self.path)
        # The vector index cache's lock; the connection has its own (the database's).
        self._lock = threading.RLock()
        self._indexes: dict[str, tuple[VectorIndex, int]] = {}
        self.schema_version = database.schema_version

    def check(self) -> None:
        """Read every page of the file and raise ``DatabaseCorrupt`` if one is damaged,
        rather than leave it to the query that meets the damage (``PRAGMA quick_check``)."""
        self._check_open()
        with self._database.connection() as db:
            self._database.file.quick_check(db)

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: two writers queue)."""
        self._check_open()
        with self._database.connection(write=True) as db:
            yield db

    def _read(
        self, sql: str, params: Sequence[Any] = (), *, side: bool = False
    ) -> list[tuple[Any, ...]]:
        self._check_open()
        # The hybrid worker's FTS5 query (``side``) runs on the database's second
        # connection, so it does not wait for this one.
        opened = self._database.reader() if side else self._database.connection()
        with opened as db:
            return db.execute(sql, params).fetchall()

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

    def _ensure_namespace(self, name: str) -> None:
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

    def count(self, namespace: str) -> int:
        ns_id = self._namespace(namespace)[0]
        return self._read("SELECT count(*) FROM records WHERE namespace_id = ?", (ns_id,))[0][0]

    def ids(self, namespace: str) -> list[str]:
        ns_id = self._namespace(namespace)[0]
        rows = self._read("SELECT id FROM records WHERE namespace_id = ? ORDER BY id", (ns_id,))
        return [row[0] for row in rows]

    def _drop(self, namespace: str) -> bool:
        rows = self._read("SELECT id FROM namespaces WHERE name = ?", (namespace,))
        if not rows:
            with self._write() as db:
                return db.execute("DELETE FROM kv WHERE namespace = ?", (namespace,)).rowcount > 0
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
        return True

    # -- writes -------------------------------------------------------------------------

    def _stored_hashes(self, namespace: str, ids: list[str]) -> dict[str, str]:
        ns_id = self._namespace(namespace)[0]
        marks = ",".join("?" * len(ids))
        rows = self._read(
            f"SELECT id, hash FROM records WHERE namespace_id = ? AND id IN ({marks})",
            (ns_id, *ids),
        )
        return dict(rows)

    def _write_rows(self, namespace: str, rows: list[Row], vectors: np.ndarray) -> int:
        # FTS5 gets Heron's analysed terms (heron.store.analysis), not the raw text.
        terms = [
            (" ".join(analyze(row.title, row.language)), " ".join(analyze(row.text, row.language)))
            for row in rows
        ]
        ids = [row.id for row in rows]
        with self._write() as db:
            ns_id = self._namespace(namespace)[0]
            (existed,) = db.execute(
                f"SELECT count(*) FROM records WHERE namespace_id = ? "
                f"AND id IN ({','.join('?' * len(ids))})",
                (ns_id, *ids),
            ).fetchone()
            (seq,) = db.execute(
                "UPDATE namespaces SET seq = seq + 1 WHERE id = ? RETURNING seq", (ns_id,)
            ).fetchone()
            for row, vector, (title, body) in zip(rows, vectors, terms, strict=True):
                (key,) = db.execute(
                    "INSERT INTO records (namespace_id, id, text, metadata, hash, vector, seq, "
                    "language) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace_id, id) "
                    "DO UPDATE SET text = excluded.text, metadata = excluded.metadata, "
                    "hash = excluded.hash, vector = excluded.vector, seq = excluded.seq, "
                    "language = excluded.language RETURNING key",
                    (
                        ns_id,
                        row.id,
                        row.text,
                        row.metadata,
                        row.hash,
                        vector.tobytes(),
                        seq,
                        row.language,
                    ),
                ).fetchone()
                db.execute(f"DELETE FROM fts_{ns_id} WHERE rowid = ?", (key,))
                db.execute(
                    f"INSERT INTO fts_{ns_id} (rowid, title, body) VALUES (?, ?, ?)",
                    (key, title, body),
                )
        return int(existed)

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

    def _fetch(self, namespace: str, id: str) -> tuple[str, str, np.ndarray] | None:
        ns_id = self._namespace(namespace)[0]
        rows = self._read(
            "SELECT text, metadata, vector FROM records WHERE namespace_id = ? AND id = ?",
            (ns_id, id),
        )
        if not rows:
            return None
        text, metadata, blob = rows[0]
        return text, metadata, np.frombuffer(blob, dtype=np.float32)

    def _scope(self, namespace: str, filters: FilterTerms, *, dense: bool) -> _Scope:
        ns_id = self._namespace(namespace)[0]
        where, params = _filter_sql(filters)
        allowed = None
        if filters:
            rows = self._read(
                f"SELECT key FROM records r WHERE namespace_id = ? {where}", (ns_id, *params)
            )
            allowed = np.array([row[0] for row in rows], dtype=np.int64)
        index = self._vector_index(namespace) if dense else None
        rows = self._read(languages_sql("records", "?"), (ns_id, ns_id))
        languages = tuple(row[0] for row in rows) or ("en",)
        return _Scope(ns_id, where, params, languages, index, allowed)

    def _dense(
        self, scope: _Scope, vector: np.ndarray, k: int, *, with_vectors: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        assert scope.index is not None  # _scope(dense=True) made it
        keys, scores = scope.index.search(vector, k, scope.allowed)
        return keys, scores, scope.index.vectors(keys) if with_vectors else None

    def _vectors(self, scope: _Scope, keys: np.ndarray) -> dict[int, np.ndarray]:
        # A record another process wrote after the index caught up is in FTS5 but not
        # yet in the index.
        assert scope.index is not None
        known = np.array([key for key in keys.tolist() if key in scope.index], dtype=np.int64)
        return dict(zip(known.tolist(), scope.index.vectors(known), strict=True))

    def _bm25_of(self, scope: _Scope, query: str, keys: np.ndarray) -> dict[int, float]:
        match = _fts_query(query, scope.languages)
        if match is None or not keys.size:
            return {}
        fts = f"fts_{scope.ns_id}"
        weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
        marks = ",".join("?" * keys.size)
        # The unary + keeps SQLite from pushing "rowid IN" into FTS5, which would run one
        # full-text query per key (55 ms for 200 keys on SciFact, against 1 ms).
        rows = self._read(
            f"SELECT rowid, -bm25({fts}, {weights}) FROM {fts} "
            f"WHERE {fts} MATCH ? AND +rowid IN ({marks})",
            (match, *keys.tolist()),
        )
        return dict(rows)

    def _lexical(
        self, scope: _Scope, query: str, k: int, *, side: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        match = _fts_query(query, scope.languages)
        if match is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        fts = f"fts_{scope.ns_id}"
        weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
        sql = (
            f"SELECT f.rowid, -bm25({fts}, {weights}) AS s FROM {fts} f "
            + ("JOIN records r ON r.key = f.rowid " if scope.where else "")
            + f"WHERE {fts} MATCH ? {scope.where} ORDER BY s DESC, f.rowid LIMIT ?"
        )
        rows = self._read(sql, (match, *scope.params, k), side=side)
        keys = np.array([row[0] for row in rows], dtype=np.int64)
        return keys, np.array([row[1] for row in rows], dtype=np.float32)

    def _hit_rows(self, keys: list[int]) -> dict[int, tuple[str, str, str]]:
        marks = ",".join("?" * len(keys))
        rows = self._read(
            f"SELECT key, id, text, metadata FROM records WHERE key IN ({marks})", keys
        )
        return {key: (rid, text, metadata) for key, rid, text, metadata in rows}

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

    def _close(self) -> None:
        self._database.close()


def _filter_sql(filters: FilterTerms) -> tuple[str, list[Any]]:
    """``[("collection", ["tasks"]), ("tags", ["a", "b"])]`` -> SQL on ``r.metadata``."""
    clauses, params = [], []
    for field_name, values in filters:
        clauses.append(f"AND json_extract(r.metadata, ?) IN ({','.join('?' * len(values))})")
        params += [f"$.{field_name}", *values]
    return " ".join(clauses), params
