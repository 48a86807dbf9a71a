"""The job store on SQLite only: what SQLite does its own way. The contract every backend keeps
is tested in ``test_contract.py``, on SQLite too."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from heron.db import SQLiteDatabase
from heron.jobs import JOBS, IllegalTransition, SQLJobStore


def test_a_change_waits_for_another_writer_then_checks_what_it_wrote(tmp_path: Path) -> None:
    """``BEGIN IMMEDIATE``: a transition takes the write lock before it reads the state it
    checks, so it queues behind another process's abort and then refuses to complete an
    aborted job, rather than check a stale state or fail with "database is locked"."""
    store = SQLJobStore(SQLiteDatabase(tmp_path / "jobs.db", JOBS))
    job = store.create("what changed?", "", "read_only", False)
    store.claim("w")
    other = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE jobs SET state = 'aborted', worker = NULL")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    start = time.monotonic()
    with pytest.raises(IllegalTransition, match="is aborted; it cannot become completed"):
        store.transition(job.id, "completed", "completed")
    waited = time.monotonic() - start
    release.join()
    other.close()
    assert waited >= 0.4
    assert [e.kind for e in store.events(job.id)] == ["created", "claimed"]
    store.close()


def test_rows_are_kept_as_earlier_releases_wrote_them(tmp_path: Path) -> None:
    """The file's layout is unchanged: booleans as 0/1, results as JSON text."""
    store = SQLJobStore(SQLiteDatabase(tmp_path / "jobs.db", JOBS))
    job = store.create("deploy", "", "deploy_allowed", True)
    store.claim("w")
    store.transition(job.id, "completed", "completed", result={"ok": True})
    store.close()
    db = sqlite3.connect(tmp_path / "jobs.db")
    row = db.execute("SELECT requires_confirmation, result FROM jobs").fetchone()
    db.close()
    assert row == (1, '{"ok": true}')
