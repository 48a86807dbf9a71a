"""Ctrl-C during ``heron index``: the real command in a subprocess, sent SIGINT while it
writes a library of many pages. It says what it kept and how to finish; the library is
marked incomplete (status, search, doctor) until the next run finishes the rest."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.libraries.conftest import write_pages
from tests.run_heron import run_heron

PAGES = 1200  # about ten groups of 128 pages (heron.libraries.index.GROUP_PAGES)


def many_pages(root: Path) -> Path:
    return write_pages(
        root,
        {
            f"c{i % 12}/page{i}.md": (
                f"# Page {i}\n\nPage {i} explains how the widget number {i} is set up, "
                f"rotated and retired.\n\n## Rotation of widget {i}\n\nRotate it every "
                f"{i % 30 + 1} days, after draining its {i % 7 + 2} queues.\n"
            )
            for i in range(PAGES)
        },
    )


def pages_written(db: Path) -> int:
    """Pages whose state the indexer has written (the last write of each page), read
    from the store's file while the indexer runs; 0 until there is one."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            (count,) = conn.execute(
                "SELECT count(*) FROM kv WHERE namespace = 'big' AND key LIKE 'page:%'"
            ).fetchone()
        return int(count)
    except sqlite3.OperationalError:  # no file, or no table, yet
        return 0


def test_ctrl_c_keeps_what_was_written_says_so_and_the_next_run_finishes(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: Ctrl-C exited 130 with no word, and the partial index was served as if
    whole ("last sync never", no warning on search)."""
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    run_heron("library", "add", "big", str(many_pages(tmp_path / "big")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "heron", "index", "big"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    db = home / "heron.db"
    deadline = time.monotonic() + 300
    while pages_written(db) == 0:  # mid-run: the first group is written, others are not
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no page written in 300 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    said = re.search(
        r"interrupted: stopped indexing big: (\d+) of (\d+) changed pages written and kept, "
        r"(\d+) still to index",
        err,
    )
    assert said, err
    written, todo, left = map(int, said.groups())
    assert todo == PAGES and written + left == PAGES and 0 < written < PAGES
    assert "finish with: heron index big" in err

    (status,) = json.loads(run_heron("library", "status", "big", "--json").stdout)
    kept = status["pages"]
    assert 0 < kept < PAGES and status["chunks"] > 0
    assert status["last_sync"] is not None  # the sync itself succeeded
    assert status["incomplete"].startswith(f"library 'big' is incompletely indexed ({kept} of")
    assert "heron index big" in status["incomplete"]
    assert "incomplete" in run_heron("library", "status", "big").stdout

    results = json.loads(run_heron("search", "rotate widget", "--json", "-k", "3").stdout)
    assert results and all("incompletely indexed" in r["note"] for r in results)
    assert results[0]["source"].startswith(str(tmp_path / "big"))  # a path to open
    shown = run_heron("search", "rotate widget", "-k", "1")
    assert "warning: library 'big' is incompletely indexed" in shown.stderr

    doctor = run_heron("doctor", "--offline", "--check", "libraries", "--json", ok=False)
    (check,) = json.loads(doctor.stdout)["checks"]
    assert check["status"] == "fail" and "incompletely indexed" in check["detail"]
    assert check["fix"] == "run: heron index big"

    (report,) = json.loads(run_heron("index", "big", "--json", timeout=600).stdout)
    assert (report["added"], report["unchanged"]) == (PAGES - kept, kept)  # resumed
    (status,) = json.loads(run_heron("library", "status", "big", "--json").stdout)
    assert (status["pages"], status["incomplete"]) == (PAGES, None)
    results = json.loads(run_heron("search", "rotate widget", "--json", "-k", "3").stdout)
    assert results and all(r["note"] is None for r in results)
