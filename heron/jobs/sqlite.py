"""``JobStore`` on SQLite: ``jobs.db`` next to the store's ``heron.db``, in WAL mode.

A sibling file rather than tables in ``heron.db``: SQLite has one writer per file, and an
index run holds the store's write lock for whole batches; job events (written every step,
and by the CLI's ``abort`` while a worker runs) would queue behind it.

The algorithm is ``heron.jobs.sql``'s; this file is the schema and the file's name in
errors. The driver (one connection shared by the process's threads under a lock, writes
in ``BEGIN IMMEDIATE`` transactions, ``sqlite3`` errors translated) is
``heron.store.database.SQLiteDatabase``, which the intervention store shares.
"""

from __future__ import annotations

from pathlib import Path

from heron.jobs.sql import Dialect, SQLJobStore
from heron.sqlite_errors import SQLiteFile
from heron.store.database import SQLiteDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    prompt TEXT NOT NULL,
    success_criteria TEXT NOT NULL DEFAULT '',
    risk_level TEXT NOT NULL CHECK (risk_level IN ('read_only', 'write', 'deploy_allowed')),
    requires_confirmation INTEGER NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    result TEXT,
    worker TEXT,
    heartbeat_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    confirmed_by TEXT,
    confirmed_at REAL,
    created_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, created_at);
CREATE TABLE IF NOT EXISTS job_events (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
"""


class SQLiteJobStore(SQLJobStore):
    """Jobs and events in one SQLite file; safe to share between threads and processes.

    >>> jobs = SQLiteJobStore(Path("jobs.db"))                       # doctest: +SKIP
    >>> job = jobs.create("is main broken?", "", "read_only", False)  # doctest: +SKIP
    >>> jobs.claim("worker-1").state                                  # doctest: +SKIP
    'running'
    """

    # ``BEGIN IMMEDIATE`` takes the file's write lock before a change reads the state it
    # checks, so no row lock is needed, and claimers take turns rather than skip rows.
    dialect = Dialect(param="?", jobs="jobs", events="job_events")

    def __init__(self, path: Path, *, event_max_bytes: int = 16_000) -> None:
        self.path = Path(path)
        file = SQLiteFile(
            self.path,
            "the job store",
            "a new, empty job store starts on the next use (the old jobs stay in the moved file)",
        )
        super().__init__(
            SQLiteDatabase(file, schema=_SCHEMA, closed=lambda: self.closed_error()),
            f"the job store {self.path}",
            event_max_bytes=event_max_bytes,
        )
