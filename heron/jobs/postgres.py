"""``JobStore`` on PostgreSQL: one queue that several Heron servers share.

``claim`` takes the oldest queued job with ``FOR UPDATE SKIP LOCKED``: servers claiming at
the same moment each lock a different row and never wait on, or take, one another's job,
so each job runs once. Every change of a job locks its row first (``FOR UPDATE``) and
appends its event in the same transaction, so events are numbered 1, 2, 3 ... without gaps
or duplicates whichever server writes them. Event streams (SSE) follow a job by polling
``events(after=seq)`` (``Jobs.follow``), which works from any server on the database;
LISTEN/NOTIFY would save the poll's few queries a second but ties each stream to one
connection of the pool.

Times are Unix seconds as on SQLite; servers sharing a queue should keep their clocks in
step (NTP), as the queue is ordered by ``created_at``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from heron.errors import StoreError
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
from heron.store.pg_schema import migrate

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE heron_jobs (
        id text PRIMARY KEY,
        prompt text NOT NULL,
        success_criteria text NOT NULL DEFAULT '',
        risk_level text NOT NULL
            CHECK (risk_level IN ('read_only', 'write', 'deploy_allowed')),
        requires_confirmation boolean NOT NULL,
        state text NOT NULL,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        started_at double precision,
        finished_at double precision,
        result text,
        worker text,
        heartbeat_at double precision,
        attempts integer NOT NULL DEFAULT 0,
        confirmed_by text,
        confirmed_at double precision,
        created_by text NOT NULL DEFAULT ''
    );
    CREATE INDEX heron_jobs_by_state ON heron_jobs (state, created_at, id);
    CREATE TABLE heron_job_events (
        job_id text NOT NULL REFERENCES heron_jobs (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        time double precision NOT NULL,
        kind text NOT NULL,
        payload text NOT NULL,
        PRIMARY KEY (job_id, seq)
    );
    """,
)

_COLUMNS = (
    "id, prompt, success_criteria, risk_level, requires_confirmation, state, created_at, "
    "updated_at, started_at, finished_at, result, worker, heartbeat_at, attempts, "
    "confirmed_by, confirmed_at"
)


def _job(row: tuple[Any, ...]) -> Job:
    values = list(row)
    values[10] = json.loads(values[10]) if values[10] else None
    return Job(*values)


class PostgresJobStore:
    """Jobs and events in PostgreSQL; safe to share between threads, processes and servers.

    >>> jobs = PostgresJobStore("postgresql://heron@db/heron")        # doctest: +SKIP
    >>> job = jobs.create("is main broken?", "", "read_only", False)  # doctest: +SKIP
    >>> jobs.claim("server-2").state                                  # doctest: +SKIP
    'running'
    """

    def __init__(
        self, url: str, *, event_max_bytes: int = 16_000, pool_size: int = 4, timeout: float = 30
    ) -> None:
        self.event_max_bytes = event_max_bytes
        parts = urlsplit(url)
        self.where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout))) as c:
                migrate(c, MIGRATIONS, "heron_job_migrations")
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            check=ConnectionPool.check_connection,
            timeout=timeout,
            name="heron-jobs",
            open=True,
        )

    def _error(self, exc: Exception) -> StoreError:
        return StoreError(
            f"The job store at {self.where} failed: {str(exc).strip()}. Check that PostgreSQL "
            "runs and HERON_DATABASE_URL, then the job (heron jobs show ID) before retrying."
        )

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection]:
        """One transaction. Not retried: an event append whose commit went unanswered
        might have landed, and a second one would duplicate it."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except (PoolTimeout, psycopg.Error) as exc:
            raise self._error(exc) from exc

    def _event(
        self, db: psycopg.Connection, job_id: str, kind: str, payload: dict[str, Any] | None
    ) -> JobEvent:
        """Append an event; the caller holds the job's row lock, so ``seq`` is free."""
        row = db.execute(
            "SELECT coalesce(max(seq), 0) + 1 FROM heron_job_events WHERE job_id = %s",
            (job_id,),
        ).fetchone()
        seq = int(row[0])  # type: ignore[index]
        clean = prepare(payload or {}, self.event_max_bytes)
        now = time.time()
        db.execute(
            "INSERT INTO heron_job_events (job_id, seq, time, kind, payload) "
            "VALUES (%s, %s, %s, %s, %s)",
            (job_id, seq, now, kind, json.dumps(clean, ensure_ascii=False)),
        )
        return JobEvent(job_id, seq, now, kind, clean)

    def _get(self, db: psycopg.Connection, job_id: str, *, lock: bool = False) -> Job:
        row = db.execute(
            f"SELECT {_COLUMNS} FROM heron_jobs WHERE id = %s" + (" FOR UPDATE" if lock else ""),
            (job_id,),
        ).fetchone()
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
        with self._tx() as db:
            db.execute(
                "INSERT INTO heron_jobs (id, prompt, success_criteria, risk_level, "
                "requires_confirmation, state, created_at, updated_at, created_by) "
                "VALUES (%s, %s, %s, %s, %s, 'queued', %s, %s, %s)",
                (
                    job_id,
                    prompt,
                    success_criteria,
                    risk_level,
                    requires_confirmation,
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
        with self._tx() as db:
            return self._get(db, job_id)

    def list(self, states: Iterable[State] = (), limit: int = 100) -> list[Job]:
        wanted = check_states(states)
        where = "WHERE state = ANY(%s)" if wanted else ""
        with self._tx() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM heron_jobs {where} ORDER BY created_at DESC, id LIMIT %s",
                [*([wanted] if wanted else []), limit],
            ).fetchall()
        return [_job(row) for row in rows]

    def claim(self, worker: str) -> Job | None:
        now = time.time()
        with self._tx() as db:
            row = db.execute(
                "UPDATE heron_jobs SET state = 'running', worker = %s, started_at = %s, "
                "updated_at = %s, heartbeat_at = %s, attempts = attempts + 1 "
                "WHERE id = (SELECT id FROM heron_jobs WHERE state = 'queued' "
                "ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) AND state = 'queued' "
                "RETURNING id",
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
        with self._tx() as db:
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
            db.execute(
                f"UPDATE heron_jobs SET {', '.join(f'{k} = %s' for k in sets)} WHERE id = %s",
                [*sets.values(), job_id],
            )
            event = self._event(
                db, job_id, kind, {"from": job.state, "to": state, **(payload or {})}
            )
            return self._get(db, job_id), event

    def append(self, job_id: str, kind: str, payload: dict[str, Any] | None = None) -> JobEvent:
        with self._tx() as db:
            self._get(db, job_id, lock=True)
            return self._event(db, job_id, kind, payload)

    def heartbeat(self, job_id: str, worker: str) -> Job:
        with self._tx() as db:
            db.execute(
                "UPDATE heron_jobs SET heartbeat_at = %s WHERE id = %s AND worker = %s",
                (time.time(), job_id, worker),
            )
            return self._get(db, job_id)

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        with self._tx() as db:
            self._get(db, job_id)
            rows = db.execute(
                "SELECT job_id, seq, time, kind, payload FROM heron_job_events "
                "WHERE job_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                (job_id, after, limit),
            ).fetchall()
        return [JobEvent(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def close(self) -> None:
        self._pool.close()
