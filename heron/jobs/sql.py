"""The job store, written once in SQL for both backends: ``SQLJobStore`` and ``JOBS``.

``SQLJobStore`` keeps the ``JobStore`` contract (``heron.jobs.base``) over a
``heron.db`` database (``SQLiteDatabase``: ``jobs.db`` beside ``heron.db``;
``PostgresDatabase``: one queue that several servers share), whose ``Dialect`` says how
its SQL differs: the placeholder, the table prefix and the locking clauses.

On SQLite, ``BEGIN IMMEDIATE`` takes the file's write lock before a change reads the state
it checks, so no row lock is needed, and claimers take turns rather than skip rows. A
sibling file rather than tables in ``heron.db``: SQLite has one writer per file, and an
index run holds the store's write lock for whole batches; job events (written every step,
and by the CLI's ``abort`` while a worker runs) would queue behind it.

On PostgreSQL, ``claim`` takes the oldest queued job with ``FOR UPDATE SKIP LOCKED``:
servers claiming at the same moment each lock a different row and never wait on, or take,
one another's job, so each job runs once. Every change of a job locks its row first
(``FOR UPDATE``) and appends its event in the same transaction, so events are numbered 1,
2, 3 ... without gaps or duplicates whichever server writes them. Event streams (SSE)
follow a job by polling ``events(after=seq)`` (``Jobs.follow``), which works from any
server on the database; LISTEN/NOTIFY would save the poll's few queries a second but ties
each stream to one connection of the pool. Calls are not retried: an event append whose
commit went unanswered might have landed, and a second one would duplicate it.

JSON is text that Python encodes and times are ``time.time()`` of the writing process, on
every backend alike, so neither needs a dialect (and servers sharing PostgreSQL order the
queue by the same clock as one server on SQLite; they should keep their clocks in step).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Collection, Iterable
from typing import Any, Protocol

from heron.core.contexts import DEFAULT
from heron.db import Database, DatabaseStore, Schema
from heron.jobs.errors import JobNotFound
from heron.jobs.events import prepare
from heron.jobs.model import (
    TERMINAL,
    Job,
    JobEvent,
    Risk,
    State,
    check_holder,
    check_states,
    check_transition,
)

#: The columns a ``Job`` is read from: its fields.
FIELDS = tuple(field.name for field in dataclasses.fields(Job))
COLUMNS = ", ".join(FIELDS)


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the algorithm uses of a DB-API connection (sqlite3's and psycopg's alike)."""

    def execute(self, sql: Any, parameters: Any = ..., /) -> Cursor: ...


#: The tables, in ``heron.db.dialect``'s notation: ``jobs.db`` on SQLite, ``heron_jobs``
#: and ``heron_job_events`` on PostgreSQL, whose migrations table is
#: ``heron_job_migrations``.
JOBS = Schema(
    name="jobs",
    noun="job",
    what="the job store",
    migrations=(
        """
CREATE TABLE {new}{p}jobs (
    id text PRIMARY KEY,
    prompt text NOT NULL,
    success_criteria text NOT NULL DEFAULT '',
    risk_level text NOT NULL CHECK (risk_level IN ('read_only', 'write', 'deploy_allowed')),
    requires_confirmation {boolean} NOT NULL,
    state text NOT NULL,
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL,
    started_at {real},
    finished_at {real},
    result text,
    worker text,
    heartbeat_at {real},
    attempts integer NOT NULL DEFAULT 0,
    confirmed_by text,
    confirmed_at {real},
    created_by text NOT NULL DEFAULT ''
);
CREATE INDEX {new}{p}jobs_by_state ON {p}jobs (state, created_at, id);
CREATE TABLE {new}{p}job_events (
    job_id text NOT NULL REFERENCES {p}jobs (id) ON DELETE CASCADE,
    seq integer NOT NULL,
    time {real} NOT NULL,
    kind text NOT NULL,
    payload text NOT NULL,
    PRIMARY KEY (job_id, seq)
){keyed};
""",
        # The conversation a job belongs to: jobs.list and the streams filter by them.
        """
ALTER TABLE {p}jobs ADD COLUMN session_id text NOT NULL DEFAULT '';
ALTER TABLE {p}jobs ADD COLUMN room text NOT NULL DEFAULT '';
CREATE INDEX {new}{p}jobs_by_session ON {p}jobs (session_id, created_at);
CREATE INDEX {new}{p}jobs_by_room ON {p}jobs (room, created_at);
""",
        # The context a job was created in: only that context sees it (jobs made before
        # contexts are the server's, ``default``).
        """
ALTER TABLE {p}jobs ADD COLUMN context text NOT NULL DEFAULT 'default';
CREATE INDEX {new}{p}jobs_by_context ON {p}jobs (context, created_at);
""",
    ),
    rebuild="a new, empty job store starts on the next use (the old jobs stay in the moved file)",
    advice="then the job (heron jobs show ID) before retrying",
    reopen="heron.jobs.open_jobs()",
)


# The statements, in ``Dialect.sql``'s notation. The claim's outer ``state = 'queued'``
# checks the row again once it is locked.
_CREATE = (
    "INSERT INTO {p}jobs (id, prompt, success_criteria, risk_level, requires_confirmation, "
    "created_by, session_id, room, context, state, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?) "
    "RETURNING {columns}"
)
_CLAIM = (
    "UPDATE {p}jobs SET state = 'running', worker = ?, started_at = ?, updated_at = ?, "
    "heartbeat_at = ?, attempts = attempts + 1 WHERE id = (SELECT id FROM {p}jobs "
    "WHERE state = 'queued'{{only}} ORDER BY created_at, id LIMIT 1{skip_locked}) "
    "AND state = 'queued' RETURNING {columns}"
)
_HEARTBEAT = "UPDATE {p}jobs SET heartbeat_at = ? WHERE id = ? AND worker = ?"
_NEXT_SEQ = "SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM {p}job_events WHERE job_id = ?"
_INSERT_EVENT = (
    "INSERT INTO {p}job_events (job_id, seq, time, kind, payload) VALUES (?, ?, ?, ?, ?)"
)
_EVENTS = (
    "SELECT job_id, seq, time, kind, payload FROM {p}job_events WHERE job_id = ? AND seq > ? "
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
    """The ``JobStore`` on a database opened with ``JOBS``; safe to share between threads,
    processes and (on PostgreSQL) servers.

    >>> jobs = SQLJobStore(SQLiteDatabase(Path("jobs.db"), JOBS))    # doctest: +SKIP
    >>> job = jobs.create("is main broken?", "", "read_only", False)  # doctest: +SKIP
    >>> jobs.claim("worker-1").state                                  # doctest: +SKIP
    'running'
    """

    def __init__(self, database: Database, *, event_max_bytes: int = 16_000) -> None:
        super().__init__(database)
        self.event_max_bytes = event_max_bytes

    # -- the algorithm ------------------------------------------------------------------

    def _run(self, db: Connection, sql: str, args: tuple[Any, ...]) -> Cursor:
        return db.execute(self.dialect.sql(sql, COLUMNS), args)

    def _get(self, db: Connection, job_id: str, *, lock: bool = False) -> Job:
        sql = "SELECT {columns} FROM {p}jobs WHERE id = ?" + ("{lock}" if lock else "")
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
        session_id: str = "",
        room: str = "",
        context: str = DEFAULT,
    ) -> Job:
        job_id = secrets.token_hex(8)
        now = time.time()
        with self._tx(write=True) as db:
            given = (prompt, success_criteria, risk_level, requires_confirmation)
            given += (created_by, session_id, room, context)
            row = self._run(db, _CREATE, (job_id, *given, now, now)).fetchone()
            where = {"by": created_by, "session_id": session_id, "room": room}
            where |= {"context": context} if context != DEFAULT else {}
            self._append(
                db,
                job_id,
                "created",
                {"risk_level": risk_level, "requires_confirmation": requires_confirmation}
                | {key: value for key, value in where.items() if value},
            )
            return _job(row)

    def get(self, job_id: str) -> Job:
        with self._tx() as db:
            return self._get(db, job_id)

    def list(
        self,
        states: Iterable[State] = (),
        limit: int = 100,
        *,
        session_id: str | None = None,
        room: str | None = None,
        context: str | None = None,
    ) -> list[Job]:
        wanted = check_states(states)
        clauses, args = [], list[Any](wanted)
        if wanted:
            clauses.append(f"state IN ({', '.join('?' * len(wanted))})")
        for column, value in (("session_id", session_id), ("room", room), ("context", context)):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        where = "WHERE " + " AND ".join(clauses) if clauses else ""
        sql = "SELECT {columns} FROM {p}jobs " + where + " ORDER BY created_at DESC, id LIMIT ?"
        with self._tx() as db:
            rows = self._run(db, sql, (*args, limit)).fetchall()
        return [_job(row) for row in rows]

    def claim(self, worker: str, contexts: Collection[str] | None = None) -> Job | None:
        if contexts is not None and not contexts:
            return None  # a runner that can run no context's jobs claims none
        names = sorted(contexts) if contexts is not None else []
        only = f" AND context IN ({', '.join('?' * len(names))})" if names else ""
        now = time.time()
        with self._tx(write=True) as db:
            row = self._run(
                db, _CLAIM.replace("{{only}}", only), (worker, now, now, now, *names)
            ).fetchone()
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
        held_by: str | None = None,
        stale_before: float | None = None,
    ) -> tuple[Job, JobEvent]:
        now = time.time()
        with self._tx(write=True) as db:
            job = self._get(db, job_id, lock=True)
            check_transition(job_id, job.state, state, expect)
            check_holder(job, held_by, stale_before)
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
            sql = "UPDATE {p}jobs SET " + assignments + " WHERE id = ? RETURNING {columns}"
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
