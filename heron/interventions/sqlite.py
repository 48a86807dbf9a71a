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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS interventions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    room TEXT NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    facts TEXT NOT NULL,
    actor TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL
        CHECK (status IN ('delivered', 'suppressed_cooldown', 'suppressed_guard')),
    text TEXT NOT NULL,
    spoken TEXT NOT NULL,
    actions TEXT NOT NULL,
    seen_before INTEGER NOT NULL,
    created_at REAL NOT NULL,
    resolved_at REAL,
    audio_url TEXT,
    outcome TEXT CHECK (outcome IN ('accept', 'dismiss')),
    outcome_by TEXT,
    outcome_at REAL
);
CREATE INDEX IF NOT EXISTS interventions_by_room ON interventions (room, status, id);
CREATE INDEX IF NOT EXISTS interventions_by_key ON interventions (room, key, status);
CREATE INDEX IF NOT EXISTS interventions_by_kind ON interventions (kind, status, outcome);
CREATE TABLE IF NOT EXISTS intervention_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    intervention_id INTEGER NOT NULL REFERENCES interventions (id) ON DELETE CASCADE,
    channel TEXT NOT NULL,
    target TEXT NOT NULL,
    ok INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    error TEXT,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS intervention_deliveries_of ON intervention_deliveries (intervention_id);
CREATE TABLE IF NOT EXISTS intervention_rooms (
    room TEXT PRIMARY KEY,
    last_id INTEGER,
    last_delivered_at REAL,
    last_severity TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS intervention_active (
    room TEXT NOT NULL,
    key TEXT NOT NULL,
    intervention_id INTEGER NOT NULL REFERENCES interventions (id),
    PRIMARY KEY (room, key)
) WITHOUT ROWID;
"""


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
            SQLiteDatabase(file, schema=_SCHEMA, closed=lambda: self.closed_error()),
            f"the intervention store {self.path}",
        )
