"""One PostgreSQL job queue, two worker processes: 1,000 jobs, none lost, none run twice.

The read-only job of ``bench.jobs`` ("what changed?": ``git status``, ``git diff --stat``
in a two-commit repository). The jobs are queued first, then two processes each run a
``JobRunner`` (4 at once) over their own ``PostgresJobStore`` until the queue is empty:
what two ``heron serve`` processes on one database do, minus HTTP. Counted from the
database afterwards: jobs completed, ``claimed`` events per job, and jobs per worker.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg

from bench.common import table
from bench.jobs import _repo
from bench.parity import postgres_url
from heron.jobs import JobRunner, Jobs
from heron.jobs.postgres import PostgresJobStore
from heron.settings import Settings

JOBS = 1000
WORKERS = 2
CONCURRENCY = 4


def worker(url: str) -> None:
    store = PostgresJobStore(url)
    jobs = Jobs(store, Settings())
    runner = JobRunner(jobs, concurrency=CONCURRENCY, worker=f"pid-{os.getpid()}")
    asyncio.run(runner.run_until_idle())
    store.close()


def run() -> str:
    url = postgres_url(f"pgjobs_{os.getpid()}")
    with tempfile.TemporaryDirectory() as tmp:
        env = os.environ | {
            "HERON_HOME": str(Path(tmp) / "home"),
            "HERON_TOOLS_ROOT": str(_repo(Path(tmp))),
            "HERON_TOOLS_COMMANDS": '["git"]',
        }
        os.environ.update(env)
        store = PostgresJobStore(url)
        jobs = Jobs(store, Settings())
        ids = [jobs.create("what changed?").id for _ in range(JOBS)]
        start = time.perf_counter()
        procs = [
            subprocess.Popen([sys.executable, "-m", "bench.pgjobs", "worker", url], env=env)
            for _ in range(WORKERS)
        ]
        codes = [p.wait() for p in procs]
        elapsed = time.perf_counter() - start
        states = Counter(jobs.get(i).state for i in ids)
        store.close()
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
        f"{JOBS} read-only jobs, {WORKERS} worker processes x {CONCURRENCY}, one PostgreSQL queue",
        ["measure", "result"],
        [
            ("worker exit codes", " ".join(map(str, codes))),
            ("jobs completed", f"{states['completed']} of {JOBS} ({dict(states)})"),
            ("jobs claimed more than once", twice),
            ("jobs never claimed", JOBS - len(claims)),
            ("jobs per worker", " / ".join(str(n) for (n,) in per_worker)),
            ("throughput", f"{JOBS / elapsed:.1f} jobs/s ({elapsed:.1f} s)"),
        ],
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(sys.argv[2])
    else:
        run()
