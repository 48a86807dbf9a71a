"""``InterventionStore`` on SQLite: ``interventions.db`` next to the store's ``heron.db``.

A file of its own for the reason ``jobs.db`` has one: SQLite has one writer per file, and
an index run holds the store's write lock for whole batches. ``BEGIN IMMEDIATE`` takes the
file's write lock before ``raise_`` reads the room's cooldown and the key's guard, so the
decision and its write are one step for every thread and process on the file.
"""

from __future__ import annotations

from pathlib import Path

from heron.interventions.sql import Dialect, SQLInterventionStore
from heron.sqlite_errors import SQLiteFile
from heron.store.database import SQLiteDatabase


class SQLiteInterventionStore(SQLInterventionStore):
    """Interventions in one SQLite file; safe to share between threads and processes."""

    dialect = Dialect(param="?")

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        file = SQLiteFile(
            self.path,
            "the intervention store",
            "a new, empty intervention store starts on the next use (the history stays in "
            "the moved file)",
        )
        super().__init__(
            SQLiteDatabase(file, schema=self.dialect.schema(), closed=lambda: self.closed_error()),
            f"the intervention store {self.path}",
        )
