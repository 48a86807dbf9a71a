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

The algorithm is ``heron.jobs.sql``'s; this file is the schema's migrations. The driver (a
connection pool, one transaction per call, psycopg's errors as one ``StoreError``) is
``heron.store.database.PostgresDatabase``, which the intervention store shares.
"""

from __future__ import annotations

from heron.jobs.sql import Dialect, SQLJobStore
from heron.store.database import PostgresDatabase

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


class PostgresJobStore(SQLJobStore):
    """Jobs and events in PostgreSQL; safe to share between threads, processes and servers.

    >>> jobs = PostgresJobStore("postgresql://heron@db/heron")        # doctest: +SKIP
    >>> job = jobs.create("is main broken?", "", "read_only", False)  # doctest: +SKIP
    >>> jobs.claim("server-2").state                                  # doctest: +SKIP
    'running'
    """

    dialect = Dialect(
        param="%s",
        jobs="heron_jobs",
        events="heron_job_events",
        lock_row=" FOR UPDATE",
        skip_locked=" FOR UPDATE SKIP LOCKED",
    )

    def __init__(
        self, url: str, *, event_max_bytes: int = 16_000, pool_size: int = 4, timeout: float = 30
    ) -> None:
        database = PostgresDatabase(
            url,
            "job",
            MIGRATIONS,
            advice="then the job (heron jobs show ID) before retrying",
            pool_size=pool_size,
            timeout=timeout,
        )
        self.where = database.where
        # One transaction per call, reads too. Not retried: an event append whose commit
        # went unanswered might have landed, and a second one would duplicate it.
        super().__init__(database, database.what, event_max_bytes=event_max_bytes)
