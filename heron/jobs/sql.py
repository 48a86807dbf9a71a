"""The job store's algorithm, written once in SQL: ``SQLJobStore``.

``SQLJobStore`` keeps the ``JobStore`` contract (``heron.jobs.base``) over a
``heron.store.database`` driver (``SQLiteDatabase``, ``PostgresDatabase``: one transaction
per call, driver errors raised as ``StoreError``, rows read by column name) and a
``Dialect`` that says how its SQL differs. A backend is one file, a subclass that sets
``dialect`` (placeholder, table names, locking clauses) and opens its database with its
tables (schema or migrations).

JSON is text that Python encodes and times are ``time.time()`` of the writing process, on
every backend alike, so neither needs a dialect (and servers sharing PostgreSQL order the
queue by the same clock as one server on SQLite).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

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
from heron.store.database import Database, DatabaseStore

#: The columns a ``Job`` is read from: its fields (``created_by`` is stored, not read).
FIELDS = tuple(field.name for field in dataclasses.fields(Job))
COLUMNS = ", ".join(FIELDS)


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the algorithm uses of a DB-API connection (sqlite3's and psycopg's alike)."""

    def execute(self, sql: Any, parameters: Any = ..., /) -> Cursor: ...


@dataclass(frozen=True)
class Dialect:
    """How one database's SQL differs from another's, as far as the job store goes."""

    #: The driver's placeholder: ``?`` (sqlite3) or ``%s`` (psycopg).
    param: str
    #: The table of jobs and the table of their events.
    jobs: str
    events: str
    #: After the SELECT that reads a job before a change checks it: a row lock
    #: (``FOR UPDATE``), where the transaction does not already hold the whole database.
    lock_row: str = ""
    #: After the claim's choice of the oldest queued job: ``FOR UPDATE SKIP LOCKED`` lets
    #: concurrent claimers pass a row another one holds instead of waiting for it.
    skip_locked: str = ""

    def sql(self, text: str) -> str:
        """``text`` in this dialect: ``{jobs}``, ``{events}``, ``{columns}``,
        ``{lock_row}`` and ``{skip_locked}`` filled in, ``?`` the driver's placeholder."""
        return _render(self, text)


@functools.lru_cache(maxsize=256)
def _render(dialect: Dialect, text: str) -> str:
    # Cached: the statements are a few dozen, and each runs thousands of times.
    filled = text.format(
        jobs=dialect.jobs,
        events=dialect.events,
        columns=COLUMNS,
        lock_row=dialect.lock_row,
        skip_locked=dialect.skip_locked,
    )
    return filled.replace("?", dialect.param)


# The statements, in ``Dialect.sql``'s notation. The claim's outer ``state = 'queued'``
# checks the row again once it is locked.
_CREATE = (
    "INSERT INTO {jobs} (id, prompt, success_criteria, risk_level, requires_confirmation, "
    "created_by, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?) "
    "RETURNING {columns}"
)
_CLAIM = (
    "UPDATE {jobs} SET state = 'running', worker = ?, started_at = ?, updated_at = ?, "
    "heartbeat_at = ?, attempts = attempts + 1 WHERE id = (SELECT id FROM {jobs} "
    "WHERE state = 'queued' ORDER BY created_at, id LIMIT 1{skip_locked}) "
    "AND state = 'queued' RETURNING {columns}"
)
_HEARTBEAT = "UPDATE {jobs} SET heartbeat_at = ? WHERE id = ? AND worker = ?"
_NEXT_SEQ = "SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM {events} WHERE job_id = ?"
_INSERT_EVENT = "INSERT INTO {events} (job_id, seq, time, kind, payload) VALUES (?, ?, ?, ?, ?)"
_EVENTS = (
    "SELECT job_id, seq, time, kind, payload FROM {events} WHERE job_id = ? AND seq > ? "
    "ORDER BY seq LIMIT ?"
)


def _job(row: Any) -> Job:
    values = {name: row[name] for name in FIELDS}
    values["requires_confirmation"] = bool(values["requires_confirmation"])  # SQLite: 0/1
    values["result"] = json.loads(values["result"]) if values["result"] else None
    return Job(**values)


def _event(row: Any) -> JobEvent:
    return JobEvent(row["job_id"], row["seq"], row["time"], row["kind"], json.loads(row["payload"]))


class SQLJobStore(DatabaseStore):
    """The ``JobStore`` algorithm over a driver and a ``Dialect``; ``what`` names the
    database in errors: "the job store /srv/heron/jobs.db"."""

    dialect: ClassVar[Dialect]

    def __init__(self, database: Database, what: str, *, event_max_bytes: int) -> None:
        super().__init__(database, what, reopen="heron.jobs.open_jobs()")
        self.event_max_bytes = event_max_bytes

    # -- the algorithm ------------------------------------------------------------------

    def _run(self, db: Connection, sql: str, args: tuple[Any, ...]) -> Cursor:
        return db.execute(self.dialect.sql(sql), args)

    def _get(self, db: Connection, job_id: str, *, lock: bool = False) -> Job:
        sql = "SELECT {columns} FROM {jobs} WHERE id = ?" + ("{lock_row}" if lock else "")
        row = self._run(db, sql, (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(f"No job {job_id!r}. List the jobs with: heron jobs list")
        return _job(row)

    def _append(
        self, db: Connection, job_id: str, kind: str, payload: dict[str, Any] | None
    ) -> JobEvent:
        """Append an event. The caller's transaction holds the job (its row lock, or the
        database's write lock), so the next ``seq`` stays free until it commits."""
        seq = int(self._run(db, _NEXT_SEQ, (job_id,)).fetchone()["seq"])
        clean = prepare(payload or {}, self.event_max_bytes)
        now = time.time()
        text = json.dumps(clean, ensure_ascii=False)
        self._run(db, _INSERT_EVENT, (job_id, seq, now, kind, text))
        return JobEvent(job_id, seq, now, kind, clean)

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
        with self._tx(write=True) as db:
            given = (prompt, success_criteria, risk_level, requires_confirmation, created_by)
            row = self._run(db, _CREATE, (job_id, *given, now, now)).fetchone()
            self._append(
                db,
                job_id,
                "created",
                {"risk_level": risk_level, "requires_confirmation": requires_confirmation}
                | ({"by": created_by} if created_by else {}),
            )
            return _job(row)

    def get(self, job_id: str) -> Job:
        with self._tx() as db:
            return self._get(db, job_id)

    def list(self, states: Iterable[State] = (), limit: int = 100) -> list[Job]:
        wanted = check_states(states)
        where = f"WHERE state IN ({', '.join('?' * len(wanted))})" if wanted else ""
        sql = "SELECT {columns} FROM {jobs} " + where + " ORDER BY created_at DESC, id LIMIT ?"
        with self._tx() as db:
            rows = self._run(db, sql, (*wanted, limit)).fetchall()
        return [_job(row) for row in rows]

    def claim(self, worker: str) -> Job | None:
        now = time.time()
        with self._tx(write=True) as db:
            row = self._run(db, _CLAIM, (worker, now, now, now)).fetchone()
            if row is None:
                return None
            job = _job(row)
            self._append(db, job.id, "claimed", {"worker": worker, "attempt": job.attempts})
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
        with self._tx(write=True) as db:
            job = self._get(db, job_id, lock=True)
            check_transition(job_id, job.state, state, expect)
            sets: dict[str, Any] = {"state": state, "updated_at": now}
            if job.state == "running":
                sets |= {"worker": None, "heartbeat_at": None}
            if state in TERMINAL:
                sets["finished_at"] = now
            if result is not None:
                sets["result"] = json.dumps(prepare(result, self.event_max_bytes))
            if confirmed_by is not None:
                sets |= {"confirmed_by": confirmed_by, "confirmed_at": now}
            assignments = ", ".join(f"{column} = ?" for column in sets)
            sql = "UPDATE {jobs} SET " + assignments + " WHERE id = ? RETURNING {columns}"
            row = self._run(db, sql, (*sets.values(), job_id)).fetchone()
            event = self._append(
                db, job_id, kind, {"from": job.state, "to": state, **(payload or {})}
            )
            return _job(row), event

    def append(self, job_id: str, kind: str, payload: dict[str, Any] | None = None) -> JobEvent:
        with self._tx(write=True) as db:
            self._get(db, job_id, lock=True)
            return self._append(db, job_id, kind, payload)

    def heartbeat(self, job_id: str, worker: str) -> Job:
        with self._tx(write=True) as db:
            self._run(db, _HEARTBEAT, (time.time(), job_id, worker))
            return self._get(db, job_id)

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        with self._tx() as db:
            self._get(db, job_id)
            rows = self._run(db, _EVENTS, (job_id, after, limit)).fetchall()
        return [_event(row) for row in rows]
