"""The ``Store`` contract: namespaced records with metadata, searchable by meaning and words.

A namespace holds one kind of thing (a library, ``skills``, ``tools``) embedded with one
model; the store refuses vectors of another model or dimension. Every backend ranks
with the same analysis (``heron.store.analysis``) and the same fusion
(``heron.store.fusion``), so results agree across backends.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

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
    ``vector`` may be given to skip the embedder (it must match the namespace's model).
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

    Writes are transactional: a batch lands whole or not at all, and concurrent writers
    from several processes never lose or corrupt each other's records. ``embedder`` is the
    model the store embeds records and queries with; ``vector``/``vectors`` given to a
    search skip embedding the queries. The driver's errors never leave a backend: a
    damaged, read-only or locked database, or one that cannot be reached, raises a
    ``StoreError`` that names it and the fix (``heron.sqlite_errors`` for SQLite).
    """

    embedder: Embedder

    def namespaces(self) -> list[NamespaceInfo]: ...

    def upsert(
        self, namespace: str, records: Iterable[Record], *, progress: Progress | None = None
    ) -> UpsertResult: ...

    def delete(self, namespace: str, ids: Iterable[str]) -> int: ...

    def get(self, namespace: str, id: str) -> Record: ...

    def ids(self, namespace: str) -> list[str]: ...

    def count(self, namespace: str) -> int: ...

    def drop(self, namespace: str) -> None: ...

    def search(
        self,
        namespace: str,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
        filters: Filters | None = None,
        vector: np.ndarray | None = None,
    ) -> list[Hit]: ...

    def search_many(
        self,
        namespace: str,
        queries: Sequence[str],
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
        filters: Filters | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[list[Hit]]: ...

    def kv_get(self, namespace: str, key: str) -> str | None: ...

    def kv_set(self, namespace: str, key: str, value: str) -> None: ...

    def kv_items(self, namespace: str, prefix: str = "") -> dict[str, str]: ...

    def kv_delete(self, namespace: str, key: str) -> None: ...

    def close(self) -> None: ...
