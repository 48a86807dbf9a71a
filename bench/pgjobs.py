"""One PostgreSQL job queue, two ``heron serve`` processes: 1,000 jobs, none lost, none run twice.

The read-only job of ``bench.jobs`` ("what changed?": ``git status``, ``git diff --stat``
in a two-commit repository). Two ``heron serve`` processes start on one database (each
with its own ``HERON_HOME``; their runners take jobs from the shared queue), then the
1,000 jobs are queued and the run lasts until none is left queued or running. Counted
from the database afterwards: jobs completed, ``claimed`` events per job, and jobs per
server.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg

import heron.jobs
from bench.common import table
from bench.jobs import _repo
from bench.parity import postgres_url
from bench.server import start_server
from heron.db.postgres import PostgresDatabase
from heron.jobs import Jobs, SQLJobStore
from heron.settings import Settings

JOBS = 1000
SERVERS = 2
CONCURRENCY = 4


def _left(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM heron_jobs WHERE state IN ('queued', 'running')"
        ).fetchone()
    return row[0] if row else 0


def run() -> str:
    url = postgres_url(f"pgjobs_{os.getpid()}")
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "HERON_DATABASE_URL": url,
            "HERON_TOOLS_ROOT": str(_repo(Path(tmp))),
            "HERON_TOOLS_COMMANDS": '["git"]',
            "HERON_JOBS_CONCURRENCY": str(CONCURRENCY),
        }
        servers = [
            start_server(env | {"HERON_HOME": str(Path(tmp) / f"home{i}")})[0]
            for i in range(SERVERS)
        ]
        try:
            store = SQLJobStore(PostgresDatabase(url, heron.jobs.JOBS))
            client = Settings(
                home=Path(tmp) / "client",
                tools={"root": env["HERON_TOOLS_ROOT"], "commands": ["git"]},
            )
            jobs = Jobs(store, client)
            start = time.perf_counter()
            ids = [jobs.create("what changed?").id for _ in range(JOBS)]
            while _left(url) and time.perf_counter() - start < 900:
                time.sleep(0.2)
            elapsed = time.perf_counter() - start
            states = Counter(jobs.get(i).state for i in ids)
            store.close()
        finally:
            for proc in servers:
                proc.send_signal(signal.SIGTERM)
            codes = [proc.wait(60) for proc in servers]
    with psycopg.connect(url) as conn:
        claims = conn.execute(
            "SELECT job_id, count(*) FROM heron_job_events WHERE kind = 'claimed' GROUP BY job_id"
        ).fetchall()
        per_worker = conn.execute(
            "SELECT worker_count FROM (SELECT payload::json->>'worker' AS w, count(*) AS "
            "worker_count FROM heron_job_events WHERE kind = 'claimed' GROUP BY 1) t ORDER BY 1"
        ).fetchall()
    twice = sum(1 for _, n in claims if n > 1)
    return table(
        f"{JOBS} read-only jobs, {SERVERS} heron serve x {CONCURRENCY}, one PostgreSQL queue",
        ["measure", "result"],
        [
            ("server exit codes", " ".join(map(str, codes))),
            ("jobs completed", f"{states['completed']} of {JOBS} ({dict(states)})"),
            ("jobs claimed more than once", twice),
            ("jobs never claimed", JOBS - len(claims)),
            ("jobs per server", " / ".join(str(n) for (n,) in per_worker)),
            ("throughput", f"{JOBS / elapsed:.1f} jobs/s ({elapsed:.1f} s)"),
        ],
    )


if __name__ == "__main__":
    run()
