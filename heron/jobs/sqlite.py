"""``JobStore`` on SQLite: ``jobs.db`` next to the store's ``heron.db``, in WAL mode.

A sibling file rather than tables in ``heron.db``: SQLite has one writer per file, and an
index run holds the store's write lock for whole batches; job events (written every step,
and by the CLI's ``abort`` while a worker runs) would queue behind it.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heron.jobs.errors import JobNotFound
from heron.jobs.events import prepare
from heron.jobs.model import (
    TERMINAL,
    Job,
    JobEvent,
    Risk,
    State,
    check_states,
    check_transition,
)
from heron.sqlite_errors import SQLiteFile

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

_COLUMNS = (
    "id, prompt, success_criteria, risk_level, requires_confirmation, state, created_at, "
    "updated_at, started_at, finished_at, result, worker, heartbeat_at, attempts, "
    "confirmed_by, confirmed_at"
)


def _job(row: tuple[Any, ...]) -> Job:
    values = list(row)
    values[4] = bool(values[4])
    values[10] = json.loads(values[10]) if values[10] else None
    return Job(*values)


class SQLiteJobStore:
    """Jobs and events in one SQLite file; safe to share between threads and processes.

    >>> jobs = SQLiteJobStore(Path("jobs.db"))                       # doctest: +SKIP
    >>> job = jobs.create("is main broken?", "", "read_only", False)  # doctest: +SKIP
    >>> jobs.claim("worker-1").state                                  # doctest: +SKIP
    'running'
    """

    def __init__(self, path: Path, *, event_max_bytes: int = 16_000) -> None:
        self.path = Path(path)
        self.event_max_bytes = event_max_bytes
        self._file = SQLiteFile(
            self.path,
            "the job store",
            "a new, empty job store starts on the next use (the old jobs stay in the moved file)",
        )
        self._lock = threading.RLock()
        self._db = self._file.connect(
            timeout=30, schema=_SCHEMA, pragmas=("synchronous=NORMAL", "foreign_keys=ON")
        )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock before reading the state it checks, so the
        # check and the update see the same row (what FOR UPDATE does on PostgreSQL).
        with self._lock, self._file.transaction(self._db) as db:
            yield db

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._file.errors():
            yield self._db

    def _read(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._reading() as db:
            return db.execute(sql, tuple(args)).fetchall()

    def _event(
        self, db: sqlite3.Connection, job_id: str, kind: str, payload: dict[str, Any] | None
    ) -> JobEvent:
        (seq,) = db.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM job_events WHERE job_id = ?", (job_id,)
        ).fetchone()
        clean = prepare(payload or {}, self.event_max_bytes)
        now = time.time()
        db.execute(
            "INSERT INTO job_events (job_id, seq, time, kind, payload) VALUES (?, ?, ?, ?, ?)",
            (job_id, seq, now, kind, json.dumps(clean, ensure_ascii=False)),
        )
        return JobEvent(job_id, seq, now, kind, clean)

    def _get(self, db: sqlite3.Connection, job_id: str) -> Job:
        row = db.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(f"No job {job_id!r}. List the jobs with: heron jobs list")
        return _job(row)

    def create(
        self,
        prompt: str,
        success_criteria: str,
        risk_level: Risk,
        requires_confirmation: bool,
        *,
        created_by: str = "",
    ) -> Job:
        job_id = secrets.token_hex(8)
        now = time.time()
        with self._write() as db:
            db.execute(
                "INSERT INTO jobs (id, prompt, success_criteria, risk_level, "
                "requires_confirmation, state, created_at, updated_at, created_by) "
                "VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)",
                (
                    job_id,
                    prompt,
                    success_criteria,
                    risk_level,
                    int(requires_confirmation),
                    now,
                    now,
                    created_by,
                ),
            )
            self._event(
                db,
                job_id,
                "created",
                {"risk_level": risk_level, "requires_confirmation": requires_confirmation}
                | ({"by": created_by} if created_by else {}),
            )
            return self._get(db, job_id)

    def get(self, job_id: str) -> Job:
        with self._reading() as db:
            return self._get(db, job_id)

    def list(self, states: Iterable[State] = (), limit: int = 100) -> list[Job]:
        wanted = check_states(states)
        where = f"WHERE state IN ({', '.join('?' * len(wanted))})" if wanted else ""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY created_at DESC, id LIMIT ?",
            [*wanted, limit],
        )
        return [_job(row) for row in rows]

    def claim(self, worker: str) -> Job | None:
        now = time.time()
        with self._write() as db:
            row = db.execute(
                "UPDATE jobs SET state = 'running', worker = ?, started_at = ?, updated_at = ?, "
                "heartbeat_at = ?, attempts = attempts + 1 WHERE id = (SELECT id FROM jobs "
                "WHERE state = 'queued' ORDER BY created_at, id LIMIT 1) RETURNING id",
                (worker, now, now, now),
            ).fetchone()
            if row is None:
                return None
            job = self._get(db, row[0])
            self._event(db, job.id, "claimed", {"worker": worker, "attempt": job.attempts})
            return job

    def transition(
        self,
        job_id: str,
        state: State,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        result: dict[str, Any] | None = None,
        confirmed_by: str | None = None,
        expect: State | None = None,
    ) -> tuple[Job, JobEvent]:
        now = time.time()
        with self._write() as db:
            job = self._get(db, job_id)
            check_transition(job_id, job.state, state, expect)
            sets = {"state": state, "updated_at": now}
            if job.state == "running":
                sets |= {"worker": None, "heartbeat_at": None}
            if state in TERMINAL:
                sets["finished_at"] = now
            if result is not None:
                sets["result"] = json.dumps(prepare(result, self.event_max_bytes))
            if confirmed_by is not None:
                sets |= {"confirmed_by": confirmed_by, "confirmed_at": now}
            db.execute(
                f"UPDATE jobs SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?",
                [*sets.values(), job_id],
            )
            event = self._event(
                db, job_id, kind, {"from": job.state, "to": state, **(payload or {})}
            )
            return self._get(db, job_id), event

    def append(self, job_id: str, kind: str, payload: dict[str, Any] | None = None) -> JobEvent:
        with self._write() as db:
            self._get(db, job_id)
            return self._event(db, job_id, kind, payload)

    def heartbeat(self, job_id: str, worker: str) -> Job:
        with self._write() as db:
            db.execute(
                "UPDATE jobs SET heartbeat_at = ? WHERE id = ? AND worker = ?",
                (time.time(), job_id, worker),
            )
            return self._get(db, job_id)

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        with self._reading() as db:
            self._get(db, job_id)
        rows = self._read(
            "SELECT job_id, seq, time, kind, payload FROM job_events "
            "WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (job_id, after, limit),
        )
        return [JobEvent(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
