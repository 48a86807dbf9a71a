"""``LogFile``: a small SQLite file of its own, for the usage logs beside the store.

The skills and tools usage logs are history, not index: they outlive a re-index with
another model and stay on the machine that saw the requests, so they are files of their
own rather than tables of the store. One connection serves every thread (a server
answers from a pool); ``use()`` serialises it and turns SQLite's errors into
``StoreError``s naming the file (``heron.sqlite_errors``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from heron.sqlite_errors import SQLiteFile


class LogFile:
    """``path`` opened (created with ``schema`` if new) in WAL mode, autocommit; ``what``
    names the log in its errors ("the skills usage log").

    >>> log = LogFile(Path("tools.db"), "CREATE TABLE t (x)", "the log")  # doctest: +SKIP
    >>> with log.use() as db:                                             # doctest: +SKIP
    ...     db.execute("INSERT INTO t VALUES (1)")
    """

    def __init__(self, path: Path, schema: str, what: str) -> None:
        self.file = SQLiteFile(path, what, "a new log starts on the next use")
        self._lock = threading.Lock()
        self._db = self.file.connect(timeout=30, schema=schema)

    @contextmanager
    def use(self) -> Iterator[sqlite3.Connection]:
        """The connection, for this thread alone, with SQLite's errors translated."""
        with self._lock, self.file.errors():
            yield self._db

    def close(self) -> None:
        with self._lock:
            self._db.close()
