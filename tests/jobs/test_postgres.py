"""The job store on PostgreSQL only: one queue for several servers, claimers that skip locked rows,
its migrations. The contract every backend keeps is tested in ``test_contract.py``, on
PostgreSQL too."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import psycopg
import pytest

from heron.db.postgres import PostgresDatabase
from heron.errors import StoreError
from heron.jobs import JOBS, Job, SQLJobStore


def open_store(url: str, **options: Any) -> SQLJobStore:
    return SQLJobStore(PostgresDatabase(url, JOBS, **options))


def test_claim_passes_a_row_another_transaction_holds(pg_url: str) -> None:
    """``FOR UPDATE SKIP LOCKED``: a claimer does not wait on the oldest job while another
    server's transaction holds it, it takes the next one."""
    store = open_store(pg_url)
    first = store.create("one", "", "read_only", False)
    second = store.create("two", "", "read_only", False)
    claimed: list[Job | None] = []
    with psycopg.connect(pg_url) as other:  # a transaction, open until the block ends
        other.execute("SELECT id FROM heron_jobs WHERE id = %s FOR UPDATE", (first.id,))
        claimer = threading.Thread(target=lambda: claimed.append(store.claim("w")))
        claimer.start()
        claimer.join(timeout=10)
        assert not claimer.is_alive(), "claim waited on the locked row"
    assert [j.id if j else None for j in claimed] == [second.id]
    again = store.claim("w")  # the lock is gone: the oldest one now
    assert again is not None and again.id == first.id
    store.close()


def test_servers_sharing_the_queue_run_each_job_once(pg_url: str) -> None:
    """Four stores (as four servers would have) claim 200 jobs at once."""
    stores = [open_store(pg_url, pool_size=2) for _ in range(4)]
    ids = [stores[0].create(f"job {i}", "", "read_only", False).id for i in range(200)]
    claimed: list[list[str]] = [[] for _ in stores]

    def work(n: int) -> None:
        while (job := stores[n].claim(f"server-{n}")) is not None:
            claimed[n].append(job.id)
            stores[n].append(job.id, "step_started", {"server": n})
            stores[n].transition(job.id, "completed", "completed", result={"by": n})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runs = Counter(job_id for mine in claimed for job_id in mine)
    assert sorted(runs) == sorted(ids) and set(runs.values()) == {1}
    assert sum(1 for mine in claimed if mine) >= 2  # the work was shared
    for job_id in ids[:20]:
        assert [e.kind for e in stores[1].events(job_id)] == [
            "created",
            "claimed",
            "step_started",
            "completed",
        ]
    for store in stores:
        store.close()


def test_schema_is_created_once(pg_url: str) -> None:
    open_store(pg_url).close()
    open_store(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT count(*) FROM heron_job_migrations").fetchone()
    assert rows == (len(JOBS.migrations),)


def test_open_jobs_uses_postgres_when_the_url_names_it(pg_url: str, tmp_path) -> None:
    from heron.jobs import open_jobs
    from heron.settings import Settings

    jobs = open_jobs(Settings(home=tmp_path, database_url=pg_url))
    try:
        assert isinstance(jobs.store.database, PostgresDatabase)
        assert not (tmp_path / "jobs.db").exists()
    finally:
        jobs.store.close()


def test_a_server_that_cannot_be_reached_says_what_to_check() -> None:
    with pytest.raises(StoreError, match=r"Check that PostgreSQL runs .* and HERON_DATABASE_URL"):
        open_store("postgresql://heron@127.0.0.1:1/heron", timeout=1)
