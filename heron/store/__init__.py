"""Namespaced records searchable by meaning (dense), by words (BM25) and by both (hybrid)."""

from __future__ import annotations

from heron.db import SQLiteDatabase, open_database
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
from heron.store.schema import STORE
from heron.store.sql import SQLStore
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
    "check_store",
    "open_store",
]


def open_store(settings: Settings, embedder: Embedder | None = None) -> Store:
    """The store the settings point at: PostgreSQL when ``HERON_DATABASE_URL`` is a
    ``postgresql://`` URL, else the SQLite file (``heron.db.open_database`` decides, the
    one place that does). ``embedder``: one to share, left open by ``store.close()``;
    without one the configured embedder is loaded for this store, and ``store.close()``
    closes it (the ownership rule, ``heron.store.base``)."""
    if embedder is not None:
        return _connect(settings, embedder)
    loaded = load_embedder(settings)
    try:
        store = _connect(settings, loaded)
    except BaseException:
        loaded.close()
        raise
    store.resources.callback(loaded.close)
    return store


def _connect(settings: Settings, embedder: Embedder) -> SQLStore:
    """The store class of the backend ``open_database`` opened, given that database."""
    database = open_database(settings, STORE)
    try:
        if isinstance(database, SQLiteDatabase):
            return SQLiteStore(database, embedder)
        from heron.store.postgres import PostgresStore  # psycopg only when it is used

        return PostgresStore(database, embedder)
    except BaseException:
        database.close()
        raise


def check_store(store: Store) -> None:
    """Raise ``DatabaseCorrupt`` when the store is damaged anywhere, not only where a
    query has looked: what ``heron index`` and ``heron library status`` run before they
    report success. The SQLite store reads every page (``PRAGMA quick_check``: 0.8 s per
    100 MB from disk, 0.1 s from the page cache); PostgreSQL checks its pages as it reads
    them, so there is nothing to add there."""
    if isinstance(store, SQLiteStore):
        store.check()
