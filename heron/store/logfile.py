"""``open_log``: a small SQLite file of its own, for the usage logs beside the store.

The skills and tools usage logs are history, not index: they outlive a re-index with
another model and stay on the machine that saw the requests, so they are files of their
own rather than tables of the store. One connection serves every thread (a server
answers from a pool); its owner serialises use with a lock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from heron.errors import StoreError


def open_log(path: Path, schema: str, what: str) -> sqlite3.Connection:
    """``path`` opened (created with ``schema`` if new) in WAL mode, autocommit; ``what``
    names the log in the error a damaged or unwritable file gets."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(schema)
    except (OSError, sqlite3.DatabaseError) as exc:
        raise StoreError(
            f"Cannot open the {what} {path}: {exc}. If it is damaged, move it aside; a new "
            "one is started on the next use."
        ) from exc
    return db
