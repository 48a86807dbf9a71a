"""``SQLiteJobStore``: the state machine, events in the same transaction, atomic claim."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from heron.jobs import IllegalTransition, JobInputError, JobNotFound, SQLiteJobStore
from heron.redact import MASK


@pytest.fixture
def store(tmp_path: Path) -> SQLiteJobStore:
    return SQLiteJobStore(tmp_path / "jobs.db", event_max_bytes=2_000)


def test_lifecycle_records_one_event_per_change(store: SQLiteJobStore) -> None:
    job = store.create("is main broken?", "tests pass", "read_only", False, created_by="bob")
    assert job.state == "queued" and job.attempts == 0 and job.finished_at is None
    claimed = store.claim("w1")
    assert claimed is not None and claimed.id == job.id
    assert (claimed.state, claimed.worker, claimed.attempts) == ("running", "w1", 1)
    assert store.claim("w2") is None  # nothing else queued
    store.append(job.id, "step_started", {"step": "git_status"})
    done, event = store.transition(job.id, "completed", "completed", result={"ok": True})
    assert done.state == "completed" and done.result == {"ok": True}
    assert done.worker is None and done.finished_at is not None
    assert event.payload == {"from": "running", "to": "completed"}
    events = store.events(job.id)
    assert [(e.seq, e.kind) for e in events] == [
        (1, "created"),
        (2, "claimed"),
        (3, "step_started"),
        (4, "completed"),
    ]
    assert events[0].payload["by"] == "bob"
    assert [e.seq for e in store.events(job.id, after=2)] == [3, 4]
    assert json.loads(events[-1].sse().split("data: ", 1)[1])["seq"] == 4


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
    store: SQLiteJobStore, path: list[str], illegal: str
) -> None:
    job = store.create("what changed this week?", "", "read_only", False)
    for state in path:
        if state == "running":
            store.claim("w")
        else:
            store.transition(job.id, state, state)  # type: ignore[arg-type]
    before = store.get(job.id)
    count = len(store.events(job.id))
    with pytest.raises(IllegalTransition, match=f"cannot become {illegal}"):
        store.transition(job.id, illegal, "nope")  # type: ignore[arg-type]
    assert store.get(job.id) == before
    assert len(store.events(job.id)) == count


def test_unknown_ids_and_states_say_what_to_do(store: SQLiteJobStore) -> None:
    with pytest.raises(JobNotFound, match="heron jobs list"):
        store.get("nope")
    with pytest.raises(JobNotFound):
        store.transition("nope", "aborted", "aborted")
    with pytest.raises(JobInputError, match="Choose from: queued, running"):
        store.list(["runnig"])  # type: ignore[list-item]


def test_list_filters_by_state_newest_first(store: SQLiteJobStore) -> None:
    first = store.create("one", "", "read_only", False)
    second = store.create("two", "", "write", False)
    store.claim("w")
    assert [j.id for j in store.list()] == [second.id, first.id]
    assert [j.id for j in store.list(["running"])] == [first.id]
    assert [j.id for j in store.list(["queued"])] == [second.id]


def test_event_payloads_are_redacted_and_cut_before_they_are_written(
    store: SQLiteJobStore,
) -> None:
    job = store.create("check", "", "read_only", False)
    token = "ghp_" + "a1B2c3D4e5" * 4
    output = "line\n" * 2_000 + f"GITHUB_TOKEN={token}\nAuthorization: Bearer xyz123secret\n"
    event = store.append(job.id, "step_finished", {"stdout": output, "password": "hunter2"})
    stored = sqlite3.connect(store.path).execute("SELECT payload FROM job_events").fetchall()
    raw = " ".join(row[0] for row in stored)
    for secret in (token, "xyz123secret", "hunter2"):
        assert secret not in raw
    assert event.payload["password"] == MASK
    assert len(json.dumps(event.payload).encode()) <= store.event_max_bytes
    assert "bytes cut" in event.payload["stdout"]
    assert event.payload["stdout"].startswith("line\n") and "Bearer" in event.payload["stdout"]


CLAIMER = """
import sys
from heron.jobs import SQLiteJobStore
store = SQLiteJobStore(sys.argv[1])
while (job := store.claim(sys.argv[2])) is not None:
    print(job.id, flush=True)
"""


def test_each_job_is_claimed_once_by_racing_processes(store: SQLiteJobStore) -> None:
    created = {store.create(f"job {i}", "", "read_only", False).id for i in range(60)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(store.path), f"w{i}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    claimed = [line for p in procs for line in p.communicate(timeout=60)[0].split()]
    assert sorted(claimed) == sorted(created)  # every job once, none twice
    assert {j.attempts for j in store.list(["running"], limit=100)} == {1}
