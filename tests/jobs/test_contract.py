"""The ``JobStore`` contract (``heron/jobs/base.py``), held on every backend.

Each test runs once per backend of the ``backend`` fixture (``tests/jobs/conftest.py``): a
SQLite file and a database on a real PostgreSQL. What only one backend does (SQLite's
writers taking turns, PostgreSQL's claimers skipping locked rows, several servers on one
queue) is in ``test_sqlite.py`` and ``test_postgres.py``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from heron.errors import StoreError
from heron.jobs import (
    IllegalTransition,
    JobInputError,
    JobNotFound,
    JobRunner,
    Jobs,
    JobStore,
)
from heron.redact import MASK
from heron.settings import Settings
from tests.jobs.conftest import Backend


def _threads(count: int, work: Callable[[int], None]) -> None:
    """``work(0)`` ... ``work(count - 1)`` at once, each in a thread; re-raises the first
    error of any of them here, where the test sees it."""
    with ThreadPoolExecutor(count) as pool:
        for _ in pool.map(work, range(count)):
            pass


# -- one job's life ---------------------------------------------------------------------


def test_lifecycle_records_one_event_per_change(job_store: JobStore) -> None:
    job = job_store.create("is main broken?", "tests pass", "read_only", False, created_by="bob")
    assert (job.state, job.attempts, job.finished_at, job.worker) == ("queued", 0, None, None)
    assert len(job.id) == 16 and job.requires_confirmation is False
    claimed = job_store.claim("w1")
    assert claimed is not None and claimed.id == job.id
    assert (claimed.state, claimed.worker, claimed.attempts) == ("running", "w1", 1)
    assert claimed.started_at is not None and claimed.heartbeat_at is not None
    assert job_store.claim("w2") is None  # nothing else queued
    job_store.append(job.id, "step_started", {"step": "git_status", "env": "password=hunter2"})
    done, event = job_store.transition(job.id, "completed", "completed", result={"ok": True})
    assert done.state == "completed" and done.result == {"ok": True}
    assert done.worker is None and done.heartbeat_at is None and done.finished_at is not None
    assert done == job_store.get(job.id)
    assert event.payload == {"from": "running", "to": "completed"}
    events = job_store.events(job.id)
    assert [(e.seq, e.kind) for e in events] == [
        (1, "created"),
        (2, "claimed"),
        (3, "step_started"),
        (4, "completed"),
    ]
    assert events[0].payload == {"risk_level": "read_only", "requires_confirmation": False} | {
        "by": "bob"
    }
    assert events[1].payload == {"worker": "w1", "attempt": 1}
    assert MASK in events[2].payload["env"] and "hunter2" not in events[2].payload["env"]
    assert events[-1] == event
    assert [e.seq for e in job_store.events(job.id, after=2)] == [3, 4]
    assert [e.seq for e in job_store.events(job.id, after=1, limit=2)] == [2, 3]
    assert events[-1].to_dict()["seq"] == 4


def test_confirmation_parks_the_job_then_requeues_it_confirmed(job_store: JobStore) -> None:
    job = job_store.create("deploy it", "", "deploy_allowed", True)
    assert job.requires_confirmation is True and job.risk_level == "deploy_allowed"
    job_store.claim("w1")
    waiting, _ = job_store.transition(job.id, "waiting_for_confirmation", "waiting")
    assert waiting.worker is None and waiting.finished_at is None
    queued, event = job_store.transition(
        job.id,
        "queued",
        "confirmed",
        {"by": "ada"},
        confirmed_by="ada",
        expect="waiting_for_confirmation",
    )
    assert (queued.state, queued.confirmed_by) == ("queued", "ada")
    assert queued.confirmed_at is not None
    assert event.payload == {"from": "waiting_for_confirmation", "to": "queued", "by": "ada"}
    again = job_store.claim("w2")
    assert again is not None and (again.worker, again.attempts) == ("w2", 2)
    assert again.confirmed_by == "ada"


def test_a_risk_level_outside_the_list_is_refused_and_writes_nothing(job_store: JobStore) -> None:
    with pytest.raises(StoreError):
        job_store.create("do anything", "", "root", False)  # type: ignore[arg-type]
    assert job_store.list() == []


def test_heartbeat_marks_only_the_holder_and_shows_an_abort(backend: Backend) -> None:
    worker, cli = backend.open(), backend.open()
    job = worker.create("what changed?", "", "read_only", False)
    claimed = worker.claim("w1")
    assert claimed is not None and claimed.heartbeat_at is not None
    time.sleep(0.01)
    beat = worker.heartbeat(job.id, "w1")
    assert beat.heartbeat_at is not None and beat.heartbeat_at > claimed.heartbeat_at
    assert worker.heartbeat(job.id, "someone else").heartbeat_at == beat.heartbeat_at
    cli.transition(job.id, "aborted", "aborted", {"by": "ada"})  # as `heron jobs abort`
    seen = worker.heartbeat(job.id, "w1")
    assert (seen.state, seen.worker, seen.heartbeat_at) == ("aborted", None, None)
    assert [e.kind for e in worker.events(job.id)] == ["created", "claimed", "aborted"]
    worker.close()
    cli.close()


def test_a_takeover_is_decided_in_the_transaction(job_store: JobStore) -> None:
    """``held_by`` and ``stale_before`` (issue 47): a replica taking a silent worker's job
    over wins only while that worker still holds it without a newer heartbeat, and a
    worker whose job was taken over and claimed again writes nothing more."""
    job = job_store.create("what changed?", "", "read_only", False)
    job_store.claim("replica-a:1:x")
    seen = job_store.get(job.id)
    assert seen.heartbeat_at is not None
    with pytest.raises(IllegalTransition, match="sent a heartbeat meanwhile"):
        job_store.transition(
            job.id,
            "queued",
            "requeued",
            held_by="replica-a:1:x",
            stale_before=seen.heartbeat_at,  # it beat at (not before) the time seen
        )
    with pytest.raises(IllegalTransition, match="no longer held by worker replica-z"):
        job_store.transition(job.id, "queued", "requeued", held_by="replica-z:1:x")
    assert job_store.get(job.id).state == "running"
    job_store.transition(
        job.id,
        "queued",
        "requeued",
        held_by="replica-a:1:x",
        stale_before=seen.heartbeat_at + 1,
    )
    job_store.claim("replica-b:2:y")
    with pytest.raises(IllegalTransition, match="now: replica-b:2:y, running"):
        job_store.transition(job.id, "completed", "completed", held_by="replica-a:1:x")
    done, _ = job_store.transition(job.id, "completed", "completed", held_by="replica-b:2:y")
    assert done.state == "completed"
    assert [e.kind for e in job_store.events(job.id)] == [
        "created",
        "claimed",
        "requeued",
        "claimed",
        "completed",
    ]


# -- what is refused --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ([], "completed"),  # queued jobs have not run
        ([], "waiting_for_confirmation"),
        (["running"], "running"),
        (["running", "completed"], "running"),
        (["running", "completed"], "aborted"),
        (["running", "aborted"], "queued"),
        (["running", "waiting_for_confirmation"], "completed"),
        (["running", "failed"], "queued"),
    ],
)
def test_illegal_transitions_are_rejected_and_change_nothing(
    job_store: JobStore, path: list[str], illegal: str
) -> None:
    job = job_store.create("what changed this week?", "", "read_only", False)
    for state in path:
        if state == "running":
            job_store.claim("w")
        else:
            job_store.transition(job.id, state, state)  # type: ignore[arg-type]
    before = job_store.get(job.id)
    count = len(job_store.events(job.id))
    with pytest.raises(IllegalTransition, match=f"cannot become {illegal}"):
        job_store.transition(job.id, illegal, "nope")  # type: ignore[arg-type]
    assert job_store.get(job.id) == before
    assert len(job_store.events(job.id)) == count


def test_expect_refuses_a_legal_edge_from_the_wrong_state(job_store: JobStore) -> None:
    job = job_store.create("what changed?", "", "write", True)
    job_store.claim("w")
    before, count = job_store.get(job.id), len(job_store.events(job.id))
    with pytest.raises(IllegalTransition, match="is running, not waiting_for_confirmation"):
        job_store.transition(job.id, "queued", "confirmed", expect="waiting_for_confirmation")
    assert job_store.get(job.id) == before and len(job_store.events(job.id)) == count


def test_unknown_ids_and_states_say_what_to_do(job_store: JobStore) -> None:
    calls: list[Callable[[], object]] = [
        lambda: job_store.get("nope"),
        lambda: job_store.transition("nope", "aborted", "aborted"),
        lambda: job_store.append("nope", "x"),
        lambda: job_store.heartbeat("nope", "w"),
        lambda: job_store.events("nope"),
    ]
    for call in calls:
        with pytest.raises(JobNotFound, match="heron jobs list"):
            call()
    with pytest.raises(JobInputError, match="Choose from: queued, running"):
        job_store.list(["runnig"])  # type: ignore[list-item]


# -- order ------------------------------------------------------------------------------


def test_list_is_newest_first_filtered_and_limited(job_store: JobStore) -> None:
    first, second, third = (job_store.create(p, "", "read_only", False) for p in "abc")
    job_store.claim("w")
    assert [j.id for j in job_store.list()] == [third.id, second.id, first.id]
    assert [j.id for j in job_store.list(limit=2)] == [third.id, second.id]
    assert [j.id for j in job_store.list(["running"])] == [first.id]
    assert [j.id for j in job_store.list(["queued"])] == [third.id, second.id]
    assert [j.id for j in job_store.list(["running", "queued"])] == [third.id, second.id, first.id]
    assert job_store.list(["completed"]) == []


def test_claim_takes_the_oldest_queued_job_first(job_store: JobStore) -> None:
    ids = [job_store.create(f"job {i}", "", "read_only", False).id for i in range(5)]
    job_store.transition(ids[1], "aborted", "aborted")
    claimed = [job_store.claim("w") for _ in range(5)]
    assert [j.id if j else None for j in claimed] == [ids[0], *ids[2:], None]


def test_claim_takes_only_a_job_of_the_contexts_named(job_store: JobStore) -> None:
    ours = job_store.create("job", "", "read_only", False, context="geomind")
    theirs = job_store.create("job", "", "read_only", False, context="ops")
    assert job_store.claim("w", []) is None  # a runner that can run no context's jobs
    claimed = job_store.claim("w", ["geomind", "default"])
    assert claimed is not None and claimed.id == ours.id
    assert job_store.claim("w", ["geomind"]) is None
    assert job_store.get(theirs.id).state == "queued"
    again = job_store.claim("w")
    assert again is not None and again.id == theirs.id


# -- what is written --------------------------------------------------------------------


def test_a_secret_in_a_payload_or_result_never_reaches_the_store(
    backend: Backend, job_store: JobStore
) -> None:
    job = job_store.create("check", "", "read_only", False)
    token = "ghp_" + "a1B2c3D4e5" * 4
    output = "line\n" * 2_000 + f"GITHUB_TOKEN={token}\nAuthorization: Bearer xyz123secret\n"
    event = job_store.append(job.id, "step_finished", {"stdout": output, "password": "hunter2"})
    job_store.claim("w")
    done, _ = job_store.transition(
        job.id,
        "completed",
        "completed",
        {"api_key": "sk-live-" + "q" * 24},
        result={"summary": f"pushed with {token}", "log": output},
    )
    raw = backend.stored()
    assert b"GITHUB_TOKEN" in raw  # the payloads are there, masked
    for secret in (token, "xyz123secret", "hunter2", "q" * 24):
        assert secret.encode() not in raw
    assert event.payload["password"] == MASK
    assert len(json.dumps(event.payload).encode()) <= job_store.event_max_bytes
    assert "bytes cut" in event.payload["stdout"]
    assert event.payload["stdout"].startswith("line\n") and "Bearer" in event.payload["stdout"]
    assert done.result is not None and token not in json.dumps(done.result)
    assert len(json.dumps(done.result).encode()) <= job_store.event_max_bytes
    assert job_store.get(job.id).result == done.result


def test_a_reopened_store_has_what_was_committed(backend: Backend) -> None:
    store = backend.open()
    job = store.create("what changed?", "", "write", True, created_by="ada")
    store.claim("w")
    done, _ = store.transition(job.id, "failed", "failed", result={"error": "boom"})
    events = store.events(job.id)
    store.close()
    again = backend.open()  # the schema is created once, the rows stay
    assert again.get(job.id) == done and again.events(job.id) == events
    assert again.list() == [done]
    again.close()


def test_close_is_idempotent_and_a_closed_store_says_so(backend: Backend) -> None:
    store, other = backend.open(), backend.open()
    job = store.create("what changed?", "", "read_only", False)
    store.close()
    store.close()
    calls: list[Callable[[], object]] = [
        lambda: store.get(job.id),
        lambda: store.list(),
        lambda: store.create("x", "", "read_only", False),
        lambda: store.claim("w"),
        lambda: store.transition(job.id, "aborted", "aborted"),
        lambda: store.append(job.id, "x"),
        lambda: store.heartbeat(job.id, "w"),
        lambda: store.events(job.id),
    ]
    for call in calls:
        with pytest.raises(StoreError, match=r"was closed.*open a new one"):
            call()
    assert other.get(job.id).state == "queued"  # other stores on the database go on
    assert other.claim("w") is not None
    other.close()


# -- concurrency ------------------------------------------------------------------------


def test_threads_sharing_one_store_claim_each_job_once(job_store: JobStore) -> None:
    ids = [job_store.create(f"job {i}", "", "read_only", False).id for i in range(80)]
    claimed: list[list[str]] = [[] for _ in range(6)]

    def work(n: int) -> None:
        while (job := job_store.claim(f"w{n}")) is not None:
            claimed[n].append(job.id)
            job_store.transition(job.id, "completed", "completed")

    _threads(len(claimed), work)
    runs = Counter(job_id for mine in claimed for job_id in mine)
    assert sorted(runs) == sorted(ids) and set(runs.values()) == {1}
    assert {j.attempts for j in job_store.list(["completed"], limit=100)} == {1}


def test_stores_sharing_a_database_claim_each_job_once(backend: Backend) -> None:
    """Four stores, as four processes or servers would hold them, claim at once."""
    stores = [backend.open() for _ in range(4)]
    ids = [stores[0].create(f"job {i}", "", "read_only", False).id for i in range(100)]
    claimed: list[list[str]] = [[] for _ in stores]

    def work(n: int) -> None:
        while (job := stores[n].claim(f"store-{n}")) is not None:
            claimed[n].append(job.id)
            stores[n].append(job.id, "step_started", {"store": n})
            stores[n].transition(job.id, "completed", "completed", result={"by": n})

    _threads(len(stores), work)
    runs = Counter(job_id for mine in claimed for job_id in mine)
    assert sorted(runs) == sorted(ids) and set(runs.values()) == {1}
    for job_id in ids[:20]:
        kinds = [e.kind for e in stores[1].events(job_id)]
        assert kinds == ["created", "claimed", "step_started", "completed"]
    for store in stores:
        store.close()


CLAIMER = """
while (job := store.claim(sys.argv[3])) is not None:
    print(job.id, flush=True)
"""


def test_each_job_is_claimed_once_by_racing_processes(
    backend: Backend, job_store: JobStore
) -> None:
    created = {job_store.create(f"job {i}", "", "read_only", False).id for i in range(60)}
    procs = [
        subprocess.Popen(backend.argv(CLAIMER, f"w{i}"), stdout=subprocess.PIPE, text=True)
        for i in range(4)
    ]
    claimed = [line for p in procs for line in p.communicate(timeout=120)[0].split()]
    assert [p.returncode for p in procs] == [0] * 4
    assert sorted(claimed) == sorted(created)  # every job once, none twice
    assert {j.attempts for j in job_store.list(["running"], limit=100)} == {1}


def test_concurrent_events_of_one_job_stay_numbered(backend: Backend) -> None:
    stores = [backend.open() for _ in range(3)]
    job = stores[0].create("noisy", "", "read_only", False)

    def write(n: int) -> None:
        for i in range(30):
            stores[n].append(job.id, "output", {"writer": n, "i": i})

    _threads(len(stores), write)
    events = stores[2].events(job.id)
    assert [e.seq for e in events] == list(range(1, 92))  # 1..n: no gap, no repeat
    for n in range(3):  # each writer's events in the order it wrote them
        assert [e.payload["i"] for e in events if e.payload.get("writer") == n] == list(range(30))
    for store in stores:
        store.close()


def test_racing_transitions_have_one_winner(backend: Backend) -> None:
    """Workers completing while others abort (as the CLI does): per job one wins, the rest
    get ``IllegalTransition``, and the job has one final event."""
    stores = [backend.open() for _ in range(4)]
    ids = [stores[0].create(f"job {i}", "", "read_only", False).id for i in range(12)]
    for _ in ids:
        stores[0].claim("w")
    targets = ["completed", "aborted", "failed", "aborted"]
    wins: list[tuple[str, str]] = []
    lost: list[str] = []  # list.append is atomic; a Counter's += is not
    start = threading.Barrier(len(stores), timeout=30)  # a thread that died breaks it

    def race(n: int) -> None:
        for job_id in ids:
            start.wait()
            try:
                stores[n].transition(job_id, targets[n], targets[n])  # type: ignore[arg-type]
                wins.append((job_id, targets[n]))
            except IllegalTransition:
                lost.append(job_id)

    _threads(len(stores), race)
    assert sorted(job_id for job_id, _ in wins) == sorted(ids)  # one winner each
    assert set(Counter(lost).values()) == {len(stores) - 1}
    for job_id, target in wins:
        assert stores[1].get(job_id).state == target
        kinds = [e.kind for e in stores[1].events(job_id)]
        assert kinds == ["created", "claimed", target]
    for store in stores:
        store.close()


# -- a crash ----------------------------------------------------------------------------

CRASHER = """
import os, signal, socket
import heron.jobs.sql
job = store.claim(f"{socket.gethostname()}:{os.getpid()}:crash")
print(job.id, flush=True)
# Die inside the next write, once its UPDATE has run and before its event is written.
heron.jobs.sql.prepare = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
store.transition(job.id, "completed", "completed", result=None)
"""


def test_a_worker_killed_mid_transaction_leaves_the_job_whole_to_recover(
    backend: Backend, job_store: JobStore, tmp_path: Path
) -> None:
    job = job_store.create("what changed?", "", "read_only", False)
    crashed = subprocess.run(backend.argv(CRASHER), capture_output=True, text=True, timeout=60)
    assert crashed.returncode == -9 and crashed.stdout.split() == [job.id], crashed.stderr
    after = job_store.get(job.id)  # the half-done transition rolled back whole
    assert (after.state, after.attempts, after.finished_at) == ("running", 1, None)
    assert after.worker is not None and after.worker.startswith(socket.gethostname() + ":")
    assert [e.kind for e in job_store.events(job.id)] == ["created", "claimed"]

    runner = JobRunner(Jobs(job_store, Settings(home=tmp_path / "home")))
    assert [j.id for j in runner.recover()] == [job.id]  # its worker is gone: requeued
    assert job_store.get(job.id).state == "queued"
    again = job_store.claim("w2")
    assert again is not None and (again.id, again.attempts) == (job.id, 2)
    events = job_store.events(job.id)
    assert [(e.seq, e.kind) for e in events] == [
        (1, "created"),
        (2, "claimed"),
        (3, "requeued"),
        (4, "claimed"),
    ]
    assert "is gone" in events[2].payload["reason"]
