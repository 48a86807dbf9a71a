"""The ``Store`` contract: namespaced records with metadata, searchable by meaning and words.

``Store`` below spells out what every backend promises: arguments, results and their
order, errors, transactions, concurrency and ``close()``. A namespace holds one kind of
thing (a library, ``skills``, ``tools``) embedded with one model; the store refuses
vectors of another model or dimension. Every backend runs the same algorithm
(``heron.store.sql``), the same analysis (``heron.store.analysis``) and the same fusion
(``heron.store.fusion``), so results agree across backends.

**Ownership.** Whoever opens a resource closes it; whoever is handed one leaves it open.
Heron's resources (stores, embedders, skill indexes, toolboxes, agents, pools) follow
this one rule: an ``open_*`` helper (``open_store``, ``open_skills``, ``open_tools``,
``open_agent``) returns an object that owns what the helper opened for it and closes
that in ``close()``; what the caller passed in (``open_skills(store=...)``,
``open_store(settings, embedder)``) stays open. A constructor (``SkillIndex(store,
dirs)``, ``Toolbox(registry, store)``, ``Agent(...)``) is handed its parts and never
closes them; what it should close goes in its ``resources`` (a ``contextlib.ExitStack``).
A store over a database is built for that database alone, so it takes it over:
``SQLiteStore(database, embedder)`` closes the database, never the embedder. So a
server opens one store (and with it one embedder and, on PostgreSQL, one pool) and hands
it to everything else (``heron.server.runtime``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self

import numpy as np

from heron.embed.base import Embedder

SearchMode = Literal["dense", "lexical", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "lexical", "hybrid")
Filters = Mapping[str, Any]
Progress = Callable[[int], None]


@dataclass
class Record:
    """What a caller stores: ``text`` is embedded and indexed, ``metadata`` is JSON.

    ``metadata["title"]``, when present, is indexed as its own lexical field.
    ``metadata["language"]`` (``"pt"``, ``"es"``, ``"pt-BR"`` ...) is the language title
    and text are analysed in (``heron.store.analysis.record_language``; English without
    it). ``vector`` may be given to skip the embedder (it must match the namespace's model).
    """

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: np.ndarray | None = None

    def content_hash(self) -> str:
        """Changes when anything that reaches the index changes, and only then."""
        digest = hashlib.sha256(self.text.encode("utf-8"))
        digest.update(json.dumps(self.metadata, sort_keys=True, default=str).encode())
        if self.vector is not None:
            digest.update(np.asarray(self.vector, dtype=np.float32).tobytes())
        return digest.hexdigest()


@dataclass
class Hit:
    """One search result with the evidence for its rank.

    ``score`` orders the results of the mode asked for. ``dense_score`` is the cosine
    similarity and ``lexical_score`` the BM25 score, each ``None`` when that side did not
    score the record; ``*_rank`` are 1-based positions in each side's candidate list.
    ``vector`` is the record's stored unit vector where the search had it in hand (hybrid
    search), for a caller that fuses several searches' hits again; never serialised.
    """

    id: str
    score: float
    text: str
    metadata: dict[str, Any]
    rank: int
    dense_score: float | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    lexical_rank: int | None = None
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "rank": self.rank,
            "dense_score": self.dense_score,
            "lexical_score": self.lexical_score,
            "dense_rank": self.dense_rank,
            "lexical_rank": self.lexical_rank,
            "metadata": self.metadata,
            "text": self.text,
        }


@dataclass(frozen=True)
class NamespaceInfo:
    name: str
    model_id: str
    dim: int
    count: int


@dataclass(frozen=True)
class UpsertResult:
    """``unchanged`` records had the same content hash and cost nothing."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0


class Store(Protocol):
    """Records in namespaces, a key-value table, and three kinds of search.

    The backends are ``SQLiteStore`` (one file, shared by the threads and processes of
    one machine) and ``PostgresStore`` (one database, shared by machines); both are
    ``heron.store.sql.SQLStore``, and ``tests/store/test_contract.py`` runs every promise
    below on each. ``open_store()`` picks one from the settings.

    Example usage::

        store = open_store(Settings())
        store.upsert("docs", [Record("pods", "A Pod runs containers.", {"title": "Pods"})])
        hits = store.search("docs", "what runs a container?", top_k=3)
        print(hits[0].id, hits[0].rank)          # pods 1
        store.close()

    **Namespaces.** A namespace holds the records of one kind (a library, ``skills``,
    ``tools``) embedded with one model. The first ``upsert`` creates it with
    ``embedder.model_id`` and ``embedder.dim``; from then on every method that reads or
    writes its records raises ``NamespaceMismatch`` when the store's embedder is another
    model or dimension (``namespaces``, ``drop`` and the ``kv_*`` methods do not look at
    the model, so a namespace can always be listed, dropped and re-indexed). Names are
    letters, digits, ``_``, ``-`` and ``.``, 128 at most, starting with a letter or digit.

    **Errors.** Every error is a ``heron.errors.HeronError`` whose message says what
    happened and what to do; the driver's exceptions never leave a backend.

    * ``InputError``: the call itself is wrong (a bad namespace name, mode, ``top_k``,
      filter, query vector or record). Arguments are checked before the database is
      touched; a bad record stops its batch before anything of the batch is written.
    * ``NotFound`` (also a ``KeyError``): the namespace or record does not exist.
    * ``NamespaceMismatch``: the namespace was built with another model (see above).
    * ``StoreError`` and its ``DatabaseCorrupt``, ``DatabaseReadOnly``, ``DatabaseBusy``:
      the database failed, is damaged, read-only or locked past the timeout, or cannot be
      reached; the message names it (file or ``host:port/db``, never a password) and the
      fix (``heron.db.sqlite`` for SQLite).

    **Transactions.** ``upsert`` writes in batches of ``heron.store.sql.BATCH`` records,
    each one transaction: a batch lands whole or not at all, and a failed upsert keeps
    the batches before it (run it again: unchanged records cost nothing). ``delete``,
    ``drop``, ``kv_set`` and ``kv_delete`` are one transaction each.

    **Concurrency.** One store object may be shared by threads. Several store objects on
    one database (other processes; for PostgreSQL other machines) never lose or corrupt
    each other's writes; two upserts of one id leave one of the two records whole. A
    search sees every write that returned before it began, from any writer. A record
    deleted while a search runs is left out of its hits, so a search may return fewer
    than ``top_k`` hits then.

    **Lifetime.** ``close()`` releases the connections, the connection pool and the
    hybrid search's worker thread; a second ``close()`` does nothing, and any other call
    after it raises ``StoreError``. It does not close the ``embedder`` it was handed:
    whoever made the embedder closes it (``open_store`` hands the one it loaded to the
    store it returns, whose ``close()`` then closes it; see *Ownership* above).
    """

    #: The model the store embeds records and queries with.
    embedder: Embedder

    def namespaces(self) -> list[NamespaceInfo]:
        """Every namespace an ``upsert`` created and no ``drop`` removed, whatever its
        model, sorted by name (code point order), with the number of records it holds.

        A name that has only key-value state (``kv_set`` before any ``upsert``) is not
        listed.
        """
        ...

    def upsert(
        self, namespace: str, records: Iterable[Record], *, progress: Progress | None = None
    ) -> UpsertResult:
        """Add records, or replace the records of the same id, whole.

        ``records`` is read lazily, ``BATCH`` at a time, so a generator of millions is
        fine. A record whose content hash (``Record.content_hash``: text, metadata and
        given vector) equals the stored one is skipped before embedding, so loading the
        same records twice embeds nothing the second time. A record's ``vector``, when
        given, is used instead of embedding its text (scaled to unit length).
        ``metadata["title"]``, when present, is indexed as its own lexical field, weighted
        4 against the text's 1; both are analysed in ``metadata["language"]``, and a query
        in every language the namespace holds (``heron.store.analysis``). Within one batch
        a repeated id counts once: the last record of that id wins.

        ``progress(n)`` says ``n`` more records are done, so a bar can move while a
        batch embeds: it is called as records of the batch are embedded, in steps (the
        first of ``heron.store.sql.FIRST_STEP`` records, the next ones about a second's
        work each), then once the batch is written with the rest of it (records skipped
        as unchanged, records with their own vector). The ``n`` of one batch add up to
        its size, and of the whole call to the number of records read. A record counted
        as embedded is written when its batch's transaction commits, right after.

        Returns ``UpsertResult(added, updated, unchanged)``: records new to the namespace,
        records that replaced one of the same id, and records skipped (unchanged, or an
        earlier copy of a repeated id).

        Creates the namespace if it does not exist (it stays, empty, if the first batch
        then fails). Raises ``InputError`` for an invalid
        namespace name or record: an empty or non-string id, text that is not a string,
        metadata that is not a JSON object of strict JSON (no NaN or infinity), a vector
        of the wrong shape, with NaN or infinity, or of length zero, and, on PostgreSQL,
        NUL characters in an id or text. Nothing of the batch holding a bad record is
        written. Raises ``NamespaceMismatch`` and ``StoreError`` as the class says.
        """
        ...

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        """Remove the records of ``ids`` (from every search too); ids the namespace does
        not hold are ignored. Returns how many records were removed. One transaction.
        Raises ``NotFound`` if the namespace does not exist, ``NamespaceMismatch``."""
        ...

    def get(self, namespace: str, id: str) -> Record:
        """The stored record: its text, its metadata as stored (a JSON round trip) and its
        unit vector (``float32``, shape ``(dim,)``). Raises ``NotFound`` for a missing
        namespace or id, ``NamespaceMismatch``."""
        ...

    def ids(self, namespace: str) -> list[str]:
        """Every record id of the namespace, sorted in code point order. Raises
        ``NotFound``, ``NamespaceMismatch``."""
        ...

    def count(self, namespace: str) -> int:
        """How many records the namespace holds. Raises ``NotFound``,
        ``NamespaceMismatch``."""
        ...

    def drop(self, namespace: str) -> None:
        """Delete the namespace, its records, its indexes and its key-value state, whatever
        model built it (how a namespace is re-indexed with another model). State alone
        (``kv_set`` before any record) is dropped too. One transaction. Raises
        ``NotFound`` when there is neither a namespace nor state of that name."""
        ...

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
        """``search_many(namespace, [query], ...)[0]``; ``vector`` is the query's vector
        (shape ``(dim,)`` or ``(1, dim)``), given to skip embedding it. A backend that
        subclasses ``Store`` inherits this."""
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
        """The ``top_k`` best records for each query, one list per query, in order; the
        queries are embedded in one batch (``vectors``, one row per query, skips that).
        Each list equals what ``search`` returns for that query alone.

        ``mode``: ``"dense"`` ranks by the cosine of the record's and the query's vectors;
        ``"lexical"`` by BM25 (SQLite FTS5's formula, k1 1.2, b 0.75) over the analysed
        terms of ``heron.store.analysis``, title weighted 4 and text 1; ``"hybrid"`` fuses
        the two sides' 200 best candidates, each scored exactly on both sides
        (``heron.store.fusion``). Lexical search returns only records that match at
        least one query term: a query of stopwords finds nothing.

        ``filters`` keeps the records whose metadata matches every field given: a scalar
        value must equal the field's value, a list of values must hold it; a dotted field
        (``source.kind``) reaches into nested objects. A field holding a list is compared
        whole, not by its members.

        Returns at most ``top_k`` ``Hit``s a query, best first, ``rank`` 1 to n, with each
        side's score and rank as evidence (``None`` where a side did not score the
        record). Equal scores are ordered by when the records were first stored, older
        first (an update keeps a record's place). Dense search is exact up to 20,000
        records on SQLite and approximate (HNSW, recall@10 about 0.97) above that, or
        wherever PostgreSQL's planner uses its HNSW index. An empty namespace gives
        empty lists.

        Raises ``InputError`` for an unknown mode, ``top_k`` below 1, an invalid filter
        field or an empty list of filter values, query vectors of the wrong shape or
        count or with NaN; ``NotFound`` for a missing namespace; ``NamespaceMismatch``.
        """
        ...

    def kv_get(self, namespace: str, key: str) -> str | None:
        """The value of ``key`` in the namespace's key-value state, or None. The state is
        independent of records (any name, no model check) until ``drop`` clears it."""
        ...

    def kv_set(self, namespace: str, key: str, value: str) -> None:
        """Set ``key`` to ``value``, replacing any earlier value. One transaction."""
        ...

    def kv_items(self, namespace: str, prefix: str = "") -> dict[str, str]:
        """Every key starting with ``prefix`` and its value, sorted by key (code point
        order)."""
        ...

    def kv_delete(self, namespace: str, key: str) -> None:
        """Remove ``key``; a missing key is not an error. One transaction."""
        ...

    def close(self) -> None:
        """Release what the store holds (see the class); idempotent."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...
