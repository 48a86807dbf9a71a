"""``PostgresJobStore`` on a real PostgreSQL: the contract, and one queue for several servers."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest

from heron.jobs import IllegalTransition, JobNotFound
from heron.jobs.postgres import MIGRATIONS, PostgresJobStore
from heron.redact import MASK
from tests.postgres import pg_server, pg_url  # noqa: F401


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresJobStore]:  # noqa: F811
    jobs = PostgresJobStore(pg_url, event_max_bytes=2_000)
    yield jobs
    jobs.close()


def test_lifecycle_records_one_event_per_change(store: PostgresJobStore) -> None:
    job = store.create("is main broken?", "tests pass", "read_only", False, created_by="bob")
    assert job.state == "queued" and job.attempts == 0 and job.requires_confirmation is False
    claimed = store.claim("w1")
    assert claimed is not None and claimed.id == job.id
    assert (claimed.state, claimed.worker, claimed.attempts) == ("running", "w1", 1)
    assert store.claim("w2") is None
    store.append(job.id, "step_started", {"step": "git_status", "env": "password=hunter2"})
    done, event = store.transition(job.id, "completed", "completed", result={"ok": True})
    assert done.state == "completed" and done.result == {"ok": True} and done.worker is None
    assert event.payload == {"from": "running", "to": "completed"}
    events = store.events(job.id)
    assert [(e.seq, e.kind) for e in events] == [
        (1, "created"),
        (2, "claimed"),
        (3, "step_started"),
        (4, "completed"),
    ]
    assert events[0].payload["by"] == "bob"
    assert MASK in events[2].payload["env"]
    assert [e.seq for e in store.events(job.id, after=2)] == [3, 4]
    assert [j.id for j in store.list(["completed"])] == [job.id]
    assert store.list(["queued"]) == []


def test_illegal_transitions_change_nothing(store: PostgresJobStore) -> None:
    job = store.create("what changed?", "", "write", True)
    store.claim("w")
    store.transition(job.id, "waiting_for_confirmation", "waiting")
    before, count = store.get(job.id), len(store.events(job.id))
    with pytest.raises(IllegalTransition, match="cannot become completed"):
        store.transition(job.id, "completed", "nope")
    with pytest.raises(IllegalTransition, match="not running"):
        store.transition(job.id, "queued", "confirmed", expect="running")
    assert store.get(job.id) == before and len(store.events(job.id)) == count
    with pytest.raises(JobNotFound, match="heron jobs list"):
        store.append("nope", "x")


def test_servers_sharing_the_queue_run_each_job_once(pg_url: str) -> None:  # noqa: F811
    """Four stores (as four servers would have) claim 200 jobs at once."""
    stores = [PostgresJobStore(pg_url, pool_size=2) for _ in range(4)]
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


def test_concurrent_events_of_one_job_stay_numbered(pg_url: str) -> None:  # noqa: F811
    stores = [PostgresJobStore(pg_url, pool_size=2) for _ in range(3)]
    job = stores[0].create("noisy", "", "read_only", False)

    def write(n: int) -> None:
        for i in range(30):
            stores[n].append(job.id, "output", {"writer": n, "i": i})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = stores[2].events(job.id)
    assert [e.seq for e in events] == list(range(1, 92))
    for n in range(3):  # each writer's events in the order it wrote them
        assert [e.payload["i"] for e in events if e.payload.get("writer") == n] == list(range(30))
    for store in stores:
        store.close()


def test_schema_is_created_once(pg_url: str) -> None:  # noqa: F811
    PostgresJobStore(pg_url).close()
    PostgresJobStore(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT count(*) FROM heron_job_migrations").fetchone()
    assert rows == (len(MIGRATIONS),)


def test_open_jobs_uses_postgres_when_the_url_names_it(pg_url: str, tmp_path) -> None:  # noqa: F811
    from heron.jobs import open_jobs
    from heron.settings import Settings

    jobs = open_jobs(Settings(home=tmp_path, database_url=pg_url))
    try:
        assert isinstance(jobs.store, PostgresJobStore)
        assert not (tmp_path / "jobs.db").exists()
    finally:
        jobs.store.close()
