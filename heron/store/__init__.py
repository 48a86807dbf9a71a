"""Namespaced records searchable by meaning (dense), by words (BM25) and by both (hybrid)."""

from __future__ import annotations

from heron.embed import Embedder, load_embedder
from heron.settings import Settings
from heron.store.base import (
    SEARCH_MODES,
    Hit,
    NamespaceInfo,
    Record,
    SearchMode,
    Store,
    UpsertResult,
)
from heron.store.sqlite import SQLiteStore

__all__ = [
    "SEARCH_MODES",
    "Hit",
    "NamespaceInfo",
    "Record",
    "SQLiteStore",
    "SearchMode",
    "Store",
    "UpsertResult",
    "open_store",
]


def open_store(settings: Settings | None = None, embedder: Embedder | None = None) -> Store:
    """The store the settings point at, with the configured embedder: PostgreSQL when
    ``HERON_DATABASE_URL`` is a ``postgresql://`` URL, else the SQLite file."""
    settings = settings or Settings()
    embedder = embedder or load_embedder(settings)
    if settings.postgres_url:
        from heron.store.postgres import PostgresStore  # psycopg only when it is used

        return PostgresStore(settings.postgres_url, embedder)
    return SQLiteStore(settings.db_path, embedder)
