"""``SQLStore``: the ``Store`` algorithm written once; a backend adds its driver and dialect.

What every backend does the same way lives here: checking the arguments, upserting in
batches that skip unchanged records before embedding, the three search modes, hybrid
fusion with each candidate scored exactly on both sides, and turning fused keys into
``Hit``s. A backend subclasses ``SQLStore`` and provides the parts its database does its
own way, each a small method below marked *backend*:

* storage: ``_ensure_namespace``, ``_stored_hashes``, ``_write_rows``, ``_fetch``,
  ``_drop``, ``_hit_rows`` (and the plain reads and writes the ``Store`` protocol lists:
  ``namespaces``, ``count``, ``ids``, ``delete``, ``kv_*``);
* search: ``_scope`` (the namespace and filter of one search), ``_dense`` (nearest
  vectors), ``_vectors`` (stored vectors of given keys), ``_lexical`` (top BM25) and
  ``_bm25_of`` (BM25 of given keys).

Records are known to a backend by an integer ``key`` that the database assigns when a
record id is first stored and keeps across updates (SQLite's rowid, PostgreSQL's
bigserial), so ordering by key is ordering by first arrival; every tie between equal
scores is broken by it. ``heron.store.sqlite`` and ``heron.store.postgres`` are the two
backends; ``tests/store/test_contract.py`` runs the same behaviour tests on both.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import Generic, TypeVar

import numpy as np

from heron.embed.base import Embedder, check_vectors, embed_queries, splits_of
from heron.errors import InputError, NotFound, StoreError
from heron.resource import Resource
from heron.store.analysis import record_language
from heron.store.base import Filters, Hit, Progress, Record, SearchMode, Store, UpsertResult
from heron.store.fusion import Fused, fuse_with_feedback
from heron.store.validate import (
    FilterTerms,
    check_namespace_name,
    check_record,
    check_search,
    filter_terms,
    metadata_json,
    no_record,
)

#: Records per write transaction.
BATCH = 256
#: While records embed, ``progress`` hears of them about this often (seconds), and its
#: first step is this many texts (see ``embed_in_steps``).
STEP_SECONDS = 1.0
FIRST_STEP = 8
#: Each side of a hybrid search contributes this many candidates to the fusion.
CANDIDATES = 200
#: BM25 weights of the lexical fields (title, body); a title match says more (tuned on
#: SciFact train, see heron.store.fusion).
FIELD_WEIGHTS = (4.0, 1.0)

#: What a backend needs to run one search: the namespace's id, its filter rendered as
#: SQL, the vector index it searches; opaque to ``SQLStore``.
ScopeT = TypeVar("ScopeT")


@dataclass(frozen=True)
class Row:
    """A checked record on its way to the database: metadata as JSON text, the title
    indexed as its own lexical field, the language both are analysed in (its metadata's
    ``"language"``, ``heron.store.analysis.record_language``), the content hash that
    says whether it changed."""

    record: Record
    metadata: str
    title: str
    language: str
    hash: str

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def text(self) -> str:
        return self.record.text

    @classmethod
    def of(cls, record: Record) -> Row:
        check_record(record)
        metadata = metadata_json(record)
        title = str(record.metadata.get("title", ""))
        return cls(record, metadata, title, record_language(record.metadata), record.content_hash())


def batched(items: Iterable[Record], size: int) -> Iterator[list[Record]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def embed_in_steps(
    embedder: Embedder, texts: Sequence[str], progress: Progress | None = None
) -> np.ndarray:
    """``embedder.embed(texts)``, telling ``progress(n)`` as each ``n`` more are embedded.

    Without ``progress`` it is one call. With it, the texts go longest first in steps:
    ``FIRST_STEP`` texts, then each step as many as the rate so far embeds in about
    ``STEP_SECONDS`` (at most four times the last step), so a bar moves every second or
    so on a slow CPU, while a fast model or an embedding server gets few, large calls.
    Longest first, because a step then holds texts of similar length, as the embedder's
    own batches would, and a later step is never slower per text than the estimate.
    Rows come back in input order.
    """
    if progress is None or len(texts) <= FIRST_STEP:
        vectors = embedder.embed(texts)
        if progress is not None and len(texts):
            progress(len(texts))
        return vectors
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    out = np.empty((len(texts), embedder.dim), dtype=np.float32)
    start, step = 0, FIRST_STEP
    while start < len(order):
        rows = order[start : start + step]
        began = time.perf_counter()
        out[rows] = embedder.embed([texts[i] for i in rows])
        rate = len(rows) / max(time.perf_counter() - began, 1e-6)
        progress(len(rows))
        start += len(rows)
        step = max(FIRST_STEP, min(int(rate * STEP_SECONDS), 4 * len(rows)))
    return out


def record_vectors(
    embedder: Embedder, records: list[Record], progress: Progress | None = None
) -> np.ndarray:
    """Unit vectors of ``records``: their own ``vector`` if given, else the embedder's
    (``progress(n)`` told as ``n`` more are embedded, see ``embed_in_steps``)."""
    dim = embedder.dim
    out = np.empty((len(records), dim), dtype=np.float32)
    missing = [i for i, r in enumerate(records) if r.vector is None]
    if missing:
        out[missing] = embed_in_steps(embedder, [records[i].text for i in missing], progress)
    for i, record in enumerate(records):
        if record.vector is not None:
            vector = check_vectors(np.reshape(record.vector, (1, -1)), dim, f"record {record.id!r}")
            norm = float(np.linalg.norm(vector))
            if norm == 0:
                raise InputError(f"record {record.id!r}: the zero vector has no direction.")
            out[i] = vector[0] / norm
    return out


def best_first(
    keys: np.ndarray, scores: np.ndarray, vectors: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A candidate list in the contract's order: score descending, equal scores by key."""
    order = np.lexsort((keys, -scores))
    return keys[order], scores[order], None if vectors is None else vectors[order]


class SQLStore(Resource, Store, Generic[ScopeT]):
    """The shared half of every backend (see the module doc); the contract each method
    keeps is written on ``heron.store.base.Store``, whose ``search`` it inherits."""

    embedder: Embedder
    #: The database, as messages name it: the SQLite file, or PostgreSQL's host:port/db.
    where: str

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        # Hybrid search runs its lexical side on a worker thread (with a connection of its
        # own) while the calling thread does the dense side: the drivers and usearch
        # release the GIL, so the two sides take the slower one's time, not the sum.
        self._side: ThreadPoolExecutor | None = None
        self._side_lock = threading.Lock()
        self._closed = False
        #: What was opened for this store alone, closed last by ``close()``: the embedder
        #: ``open_store`` loaded for it. A store handed its embedder leaves it open.
        self.resources = contextlib.ExitStack()

    # -- backend: storage ---------------------------------------------------------------

    @abstractmethod
    def _ensure_namespace(self, name: str) -> None:
        """Create namespace ``name`` for the embedder's model if it is missing; raise
        ``NamespaceMismatch`` if it exists with another model or dimension."""

    @abstractmethod
    def _stored_hashes(self, namespace: str, ids: list[str]) -> dict[str, str]:
        """``{id: content hash}`` of those of ``ids`` the namespace holds."""

    @abstractmethod
    def _write_rows(self, namespace: str, rows: list[Row], vectors: np.ndarray) -> int:
        """Insert or replace ``rows`` with their unit ``vectors`` in one transaction, text
        index included; return how many replaced a record of the same id."""

    def _check_row(self, row: Row) -> None:
        """Raise ``InputError`` for a record this database cannot hold (nothing here)."""

    @abstractmethod
    def _fetch(self, namespace: str, id: str) -> tuple[str, str, np.ndarray] | None:
        """``(text, metadata JSON, vector)`` of record ``id``, or None."""

    @abstractmethod
    def _drop(self, namespace: str) -> bool:
        """Delete the namespace, its records, index and state; False if none existed."""

    @abstractmethod
    def _hit_rows(self, keys: list[int]) -> dict[int, tuple[str, str, str]]:
        """``{key: (id, text, metadata JSON)}`` of those of ``keys`` still stored."""

    @abstractmethod
    def _close(self) -> None:
        """Release the connections (called once, by ``close``)."""

    # -- backend: search ----------------------------------------------------------------

    @abstractmethod
    def _scope(self, namespace: str, filters: FilterTerms, *, dense: bool) -> ScopeT:
        """What the searches of one ``search_many`` call share; raises ``NotFound`` and
        ``NamespaceMismatch``. ``dense``: the call searches vectors too."""

    @abstractmethod
    def _dense(
        self, scope: ScopeT, vector: np.ndarray, k: int, *, with_vectors: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The ``k`` nearest records by cosine: keys (int64), cosines (float32) and, with
        ``with_vectors``, their stored vectors (one row each), in any order."""

    @abstractmethod
    def _vectors(self, scope: ScopeT, keys: np.ndarray) -> dict[int, np.ndarray]:
        """Stored unit vectors of ``keys``; a key the search cannot see is left out."""

    @abstractmethod
    def _lexical(
        self, scope: ScopeT, query: str, k: int, *, side: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best records by BM25 (FTS5's, weights ``FIELD_WEIGHTS``), best first,
        equal scores by key; no match (a query of stopwords) gives empty arrays. ``side``:
        called from the hybrid worker thread, concurrently with the calling thread."""

    @abstractmethod
    def _bm25_of(self, scope: ScopeT, query: str, keys: np.ndarray) -> dict[int, float]:
        """BM25 of those of ``keys`` the query matches (the others score 0.0)."""

    # -- the Store protocol -------------------------------------------------------------

    def upsert(
        self, namespace: str, records: Iterable[Record], *, progress: Progress | None = None
    ) -> UpsertResult:
        """Add or replace records by id, in transactions of ``BATCH`` records.

        Records whose content hash is unchanged are skipped before embedding, so
        loading the same file twice embeds nothing the second time. ``progress`` hears
        of a batch's records as they embed, then of the rest once the batch is written.
        """
        check_namespace_name(namespace)
        self._ensure_namespace(namespace)
        added = updated = unchanged = 0
        for batch in batched(records, BATCH):
            a, u, n, embedded = self._upsert_batch(namespace, batch, progress)
            added, updated, unchanged = added + a, updated + u, unchanged + n
            if progress and len(batch) > embedded:
                progress(len(batch) - embedded)  # the rest: unchanged, or their own vector
        return UpsertResult(added, updated, unchanged)

    def _upsert_batch(
        self, namespace: str, batch: list[Record], progress: Progress | None
    ) -> tuple[int, int, int, int]:
        """One batch, one transaction: ``(added, updated, unchanged, embedded)``;
        ``progress`` hears of the ``embedded`` records as they embed."""
        rows = {r.id: r for r in map(Row.of, batch)}  # a repeated id: the last one wins
        for row in rows.values():
            self._check_row(row)
        stored = self._stored_hashes(namespace, list(rows))
        todo = [row for rid, row in rows.items() if stored.get(rid) != row.hash]
        if not todo:
            return 0, 0, len(batch), 0
        vectors = record_vectors(self.embedder, [row.record for row in todo], progress)
        updated = self._write_rows(namespace, todo, vectors)
        embedded = sum(row.record.vector is None for row in todo)
        return len(todo) - updated, updated, len(batch) - len(todo), embedded

    def get(self, namespace: str, id: str) -> Record:
        found = self._fetch(namespace, id)
        if found is None:
            raise no_record(namespace, id)
        text, metadata, vector = found
        return Record(id, text, json.loads(metadata), vector)

    def drop(self, namespace: str) -> None:
        """Delete the namespace's records, index and key-value state (state may exist
        before any record does, so it goes even when the namespace has no records)."""
        if not self._drop(namespace):
            raise NotFound(f"No namespace {namespace!r}.")

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
        terms = filter_terms(filters)  # bad arguments fail before any work
        queries = list(queries)
        dense = mode != "lexical"
        if dense and vectors is not None:
            vectors = self._query_vectors(vectors, queries)
        scope = self._scope(namespace, terms, dense=dense)
        if dense and vectors is None:  # embedded once the namespace is known to exist
            vectors = self._query_vectors(embed_queries(self.embedder, queries), queries)
        results = []
        for i, query in enumerate(queries):
            in_hand: Mapping[int, np.ndarray] = {}  # the candidates' vectors (hybrid)
            if mode == "dense":
                keys, scores, _ = self._dense_side(scope, vectors[i], top_k, with_vectors=False)
                fused = [
                    Fused(int(k), float(s), float(s), None, r, None)
                    for r, (k, s) in enumerate(zip(keys, scores, strict=True), 1)
                ]
            elif mode == "lexical":
                keys, scores = self._lexical(scope, query, top_k, side=False)
                fused = [
                    Fused(int(k), float(s), None, float(s), None, r)
                    for r, (k, s) in enumerate(zip(keys, scores, strict=True), 1)
                ]
            else:
                fused, in_hand = self._hybrid(scope, query, vectors[i], top_k)
            results.append(self._hits(fused, in_hand))
        return results

    def close(self) -> None:
        """Stop the hybrid worker and release the connections; again, nothing happens."""
        if self._closed:
            return
        self._closed = True
        with self._side_lock:
            if self._side is not None:
                self._side.shutdown()
        try:
            self._close()
        finally:
            self.resources.close()

    # -- the shared algorithm -----------------------------------------------------------

    def _check_open(self) -> None:
        """Backends call this before each use of a connection."""
        if self._closed:
            raise StoreError(
                f"The store at {self.where} was closed; open the store again "
                "(heron.store.open_store()) to use it."
            )

    def _query_vectors(self, vectors: np.ndarray, queries: list[str]) -> np.ndarray:
        vectors = check_vectors(vectors, self.embedder.dim, "query vectors")
        if len(vectors) != len(queries):
            raise InputError(
                f"query vectors: {len(vectors)} vectors for {len(queries)} queries; "
                "give one per query, in the same order."
            )
        return vectors

    def _dense_side(
        self, scope: ScopeT, vector: np.ndarray, k: int, *, with_vectors: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        keys, scores, vectors = self._dense(scope, vector, k, with_vectors=with_vectors)
        return best_first(keys, scores, vectors)

    def _hybrid(
        self, scope: ScopeT, query: str, vector: np.ndarray, top_k: int
    ) -> tuple[list[Fused], dict[int, np.ndarray]]:
        """Both sides' candidates, each scored exactly on both sides, fused (see fusion.py),
        and the candidates' vectors by key."""
        depth = max(CANDIDATES, top_k)
        with self._side_lock:
            self._check_open()  # close() shuts the worker down under this lock
            if self._side is None:
                self._side = ThreadPoolExecutor(1, thread_name_prefix="heron-lexical")
            lexical = self._side.submit(self._lexical, scope, query, depth, side=True)
        dense_keys, _, dense_vectors = self._dense_side(scope, vector, depth, with_vectors=True)
        # fuse() ignores the fill of keys the lexical list has, so score all dense keys
        # now rather than wait for that list.
        lexical_fill = dict.fromkeys(dense_keys.tolist(), 0.0)
        lexical_fill.update(self._bm25_of(scope, query, dense_keys))
        assert dense_vectors is not None
        vectors = dict(zip(dense_keys.tolist(), dense_vectors, strict=True))
        lexical_keys, lexical_scores = lexical.result()
        vectors.update(self._vectors(scope, np.setdiff1d(lexical_keys, dense_keys)))
        # A record written or deleted by another writer between the two sides' queries
        # has no vector the dense side can see; it joins (or leaves) the next search.
        known = np.array([key in vectors for key in lexical_keys.tolist()], dtype=bool)
        fused = fuse_with_feedback(
            vector,
            vectors,
            dense_keys,
            lexical_keys[known],
            lexical_scores[known],
            top_k=top_k,
            lexical_fill=lexical_fill,
            splits=splits_of(self.embedder),
        )
        return fused, vectors

    def _hits(self, fused: list[Fused], vectors: Mapping[int, np.ndarray]) -> list[Hit]:
        if not fused:
            return []
        rows = self._hit_rows([f.key for f in fused])
        hits = []
        for f in fused:
            if f.key not in rows:  # deleted by another writer since the search
                continue
            rid, text, metadata = rows[f.key]
            hits.append(
                Hit(
                    rid,
                    f.score,
                    text,
                    json.loads(metadata),
                    len(hits) + 1,
                    f.dense_score,
                    f.lexical_score,
                    f.dense_rank,
                    f.lexical_rank,
                    vectors.get(f.key),
                )
            )
        return hits
