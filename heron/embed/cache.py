"""An embedding cache keyed by (model id, SHA-256 of the text).

Re-indexing a library re-reads every page, but only changed text should reach the
model: ``CachedEmbedder`` wraps any ``Embedder``, answers known texts from SQLite and
sends only the misses, deduplicated, to the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from heron.db import Schema, SQLiteDatabase
from heron.embed.base import Embedder, clean_texts
from heron.embed.calibration import calibration_of
from heron.errors import ModelError
from heron.resource import Resource

_CACHE = Schema(
    name="embeddings",
    what="the embedding cache",
    migrations=(
        """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
) WITHOUT ROWID;
""",
    ),
    rebuild=(
        "nothing else: it is a cache, refilled as texts are embedded again (or turn it off "
        "with HERON_EMBED_CACHE=false)"
    ),
    reopen="heron.embed.load_embedder(settings)",
)


#: Put before a query's text in its key, so that a query and a passage of the same text
#: (different vectors under a model with roles) keep different keys; no text a user
#: indexes starts with NUL.
QUERY_ROLE = "\0query\0"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder(Resource):
    """An ``Embedder`` that remembers: ``misses`` counts texts that reached the model.

    ``close()`` closes the cache file, and ``inner`` too when ``close_inner`` is set: the
    caller that made ``inner`` for this cache alone (``load_embedder``) hands it over.
    """

    def __init__(self, inner: Embedder, path: Path, *, close_inner: bool = False) -> None:
        self.inner = inner
        self.close_inner = close_inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.calibration = calibration_of(inner)
        self.misses = 0
        self.path = Path(path)
        # One connection serves every thread, each transaction under the database's lock.
        self._db = SQLiteDatabase(self.path, _CACHE, pragmas=(), rows=None)
        self._closed = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "", self.inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (``embed_queries`` in ``heron.embed.base``), cached apart from the
        passage vectors of the same texts: a model with roles gives them different vectors."""
        if not hasattr(self.inner, "embed_queries"):
            return self.embed(texts)
        return self._embed(texts, QUERY_ROLE, self.inner.embed_queries)

    def _embed(
        self, texts: Sequence[str], role: str, compute: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        texts = clean_texts(texts)
        keys = [text_key(role + t) for t in texts]
        found = self._lookup(set(keys))
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if todo:
            vectors = compute(list(todo.values()))
            fresh = dict(zip(todo, vectors, strict=True))
            with self._connection(write=True) as db:
                self.misses += len(todo)  # under the lock: threads count every miss
                db.executemany(
                    "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                    [(self.model_id, k, v.tobytes()) for k, v in fresh.items()],
                )
            found.update(fresh)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out

    @contextmanager
    def _connection(self, write: bool = False) -> Iterator[Any]:
        """The connection, for this thread alone until the block ends."""
        if self._closed:
            raise ModelError(
                f"The embedding cache {self.path} was closed; load the embedder "
                "again (heron.embed.load_embedder(settings)) to embed."
            )
        with self._db.connection(write) as db:
            yield db

    def _lookup(self, keys: set[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        batch = list(keys)
        for start in range(0, len(batch), 500):  # stay under SQLite's variable limit
            part = batch[start : start + 500]
            marks = ",".join("?" * len(part))
            with self._connection() as db:
                rows = db.execute(
                    f"SELECT text_sha256, vector FROM embeddings WHERE model_id = ? "
                    f"AND text_sha256 IN ({marks})",
                    [self.model_id, *part],
                ).fetchall()
            for key, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape == (self.dim,):  # a row from a corrupted write is re-embedded
                    found[key] = vec
        return found

    def close(self) -> None:
        """Close the cache file (and ``inner`` if ``close_inner``); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._db.close()
        if self.close_inner:
            self.inner.close()
