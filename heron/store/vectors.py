"""In-memory vector indexes over unit vectors, keyed by int64 (the record's rowid).

Two implementations, chosen by size (``choose_index``), from measurements on 2 cores
(``python -m bench vectors``; figures in docs/benchmarks.md):

* ``ExactIndex``: a NumPy matrix and one matrix-vector product. Exact, no build time,
  fastest up to some tens of thousands of rows.
* ``HnswIndex``: usearch's HNSW graph with float16 storage. Past ``EXACT_LIMIT`` rows the
  exact scan is memory-bound (100k x 384 float32 is 150 MB a query), while HNSW stays
  under a few milliseconds at 1M rows with recall@10 above 0.95. We chose usearch over
  faiss's HNSW because it builds faster here, deletes and replaces by key (faiss's HNSW
  cannot remove), and saves to one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from heron._compat import onnxruntime_before_usearch

EXACT_LIMIT = 20_000


def ef_search(size: int) -> int:
    """HNSW search breadth for an index of ``size`` vectors: graphs need a wider search
    as they grow. Recall@10 against exact (``python -m bench latency`` data): at 100k,
    ef 96 -> 0.979; at 1M, ef 96 -> 0.84, 192 -> 0.90, 384 -> 0.96, 768 -> 0.99
    (1.2 / 1.7 / 2.9 / 5.4 ms a query)."""
    return 128 if size <= 200_000 else 512


class VectorIndex(Protocol):
    """Cosine search over unit vectors.

    ``search(q, 10)`` returns ``(keys, scores)``: int64 and float32 arrays, best first,
    at most 10 long. ``allowed`` restricts the search to those keys (a metadata filter).
    """

    def __len__(self) -> int: ...

    def __contains__(self, key: int) -> bool: ...

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None: ...

    def remove(self, keys: np.ndarray) -> None: ...

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def vectors(self, keys: np.ndarray) -> np.ndarray: ...


def top_k(keys: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best (key, score) pairs, best first, ties broken by key."""
    if k < len(scores):
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        keep = np.flatnonzero(scores >= kth)  # every tie at the cut, for the key order
        keys, scores = keys[keep], scores[keep]
    order = np.lexsort((keys, -scores))[:k]
    return keys[order], scores[order]


class ExactIndex:
    """Brute force: a growable float32 matrix and a key -> row map."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix = np.empty((0, dim), dtype=np.float32)
        self._keys = np.empty(0, dtype=np.int64)
        self._rows: dict[int, int] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: int) -> bool:
        return key in self._rows

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self.remove(keys)
        needed = self._size + len(keys)
        if needed > len(self._matrix):
            capacity = max(needed, 2 * len(self._matrix), 1024)
            matrix = np.empty((capacity, self.dim), dtype=np.float32)
            matrix[: self._size] = self._matrix[: self._size]
            ids = np.empty(capacity, dtype=np.int64)
            ids[: self._size] = self._keys[: self._size]
            self._matrix, self._keys = matrix, ids
        end = self._size + len(keys)
        self._matrix[self._size : end] = vectors
        self._keys[self._size : end] = keys
        self._rows.update((int(key), row) for row, key in enumerate(keys, self._size))
        self._size = end

    def remove(self, keys: np.ndarray) -> None:
        for key in keys:
            row = self._rows.pop(int(key), None)
            if row is None:
                continue
            last = self._size - 1
            if row != last:  # move the last row into the hole
                moved = int(self._keys[last])
                self._matrix[row] = self._matrix[last]
                self._keys[row] = moved
                self._rows[moved] = row
            self._size = last

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if allowed is None:
            scores = self._matrix[: self._size] @ query
            return top_k(self._keys[: self._size], scores, k)
        keys = np.array([key for key in allowed if int(key) in self._rows], dtype=np.int64)
        return top_k(keys, self.vectors(keys) @ query, k)

    def vectors(self, keys: np.ndarray) -> np.ndarray:
        rows = [self._rows[int(key)] for key in keys]
        return self._matrix[rows]


class HnswIndex:
    """usearch HNSW (M=16, ef_construction=128, ``ef_search(size)``), float16, inner product."""

    def __init__(self, dim: int, path: Path | None = None) -> None:
        onnxruntime_before_usearch()  # or a later onnxruntime import crashes: heron._compat
        from usearch.index import Index

        self.dim = dim
        self._index = Index(
            ndim=dim,
            metric="ip",
            dtype="f16",
            connectivity=16,
            expansion_add=128,
        )
        if path is not None:
            self._index.load(str(path))
        self._index.expansion_search = ef_search(len(self._index))

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: int) -> bool:
        return key in self._index

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self.remove(keys)
        if len(keys):
            self._index.add(keys.astype(np.uint64), vectors, threads=0)
            self._index.expansion_search = ef_search(len(self._index))

    def remove(self, keys: np.ndarray) -> None:
        present = [int(k) for k in keys if int(k) in self._index]
        if present:
            self._index.remove(np.array(present, dtype=np.uint64))

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if allowed is not None:
            # A filter that keeps few rows defeats graph search; scoring the survivors
            # exactly is both correct and, for them, cheap.
            keys = np.array([key for key in allowed if int(key) in self._index], dtype=np.int64)
            return top_k(keys, self.vectors(keys) @ query, k)
        if not len(self._index):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        found = self._index.search(query, min(k, len(self._index)), threads=1)
        # usearch reports inner-product *distance* 1 - <q, x>.
        return found.keys.astype(np.int64), (1.0 - found.distances).astype(np.float32)

    def vectors(self, keys: np.ndarray) -> np.ndarray:
        if not len(keys):
            return np.empty((0, self.dim), dtype=np.float32)
        return np.asarray(self._index.get(keys.astype(np.uint64)), dtype=np.float32)

    def save(self, path: Path) -> None:
        self._index.save(str(path))


def choose_index(dim: int, size: int) -> ExactIndex | HnswIndex:
    return ExactIndex(dim) if size <= EXACT_LIMIT else HnswIndex(dim)
