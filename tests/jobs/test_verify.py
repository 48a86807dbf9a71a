"""Jobs that verify what was asked: each success criterion by a step (or ``ok: null`` and
the criterion ``unverified``), the remote's reachability over a real ``git daemon`` on
loopback, and read-only jobs that leave the workspace byte for byte as they found it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.jobs import Jobs, open_jobs
from heron.settings import Settings
from heron.wiring import job_runner
from tests.jobs.conftest import free_port, git, tree, wait_for


def run(jobs: Jobs) -> int:
    return asyncio.run(job_runner(jobs).run_until_idle())


def test_a_criterion_no_step_ran_is_unverified_and_ok_is_null(jobs: Jobs) -> None:
    # The tests run and pass; no typecheck command is configured, and nothing checks
    # happiness: the job cannot say the criteria were met.
    job = jobs.create("look at main", "tests pass; the typecheck passes; users are happy")
    run(jobs)
    result = jobs.get(job.id).result
    assert result is not None and result["ok"] is None
    assert result["unverified"] == ["the typecheck passes", "users are happy"]
    assert result["criteria"][0] == {"criterion": "tests pass", "step": "test", "ok": True}
    assert result["criteria"][1]["why"].startswith("no typecheck command is configured")
    assert [s["step"] for s in result["steps"]] == ["git_status", "git_diff", "test"]
    completed = jobs.events(job.id)[-1]
    assert completed.kind == "completed" and completed.payload["ok"] is None


def test_a_criterion_a_step_refutes_makes_ok_false(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every command succeeds, but the criterion asks for a clean tree and app.py is
    # modified: git status verifies it, and it does not hold.
    job = jobs.create("what changed?", "the working tree is clean")
    run(jobs)
    result = jobs.get(job.id).result
    assert result is not None and result["ok"] is False and result["unverified"] == []
    (verdict,) = result["criteria"]
    assert verdict["step"] == "git_status" and verdict["ok"] is False
    assert verdict["why"] == "1 changed or untracked paths"


def test_the_criteria_add_the_typecheck_and_all_met_is_true(
    configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_JOBS_TYPECHECK_COMMAND", "sh -c 'echo typed; exit 0'")
    jobs = open_jobs(Settings())
    try:
        job = jobs.create("look at main", "it typechecks and the tests pass")
        run(jobs)
        result = jobs.get(job.id).result
        assert result is not None and result["ok"] is True and result["unverified"] == []
        assert [c["step"] for c in result["criteria"]] == ["typecheck", "test"]
        assert "Typecheck (sh -c 'echo typed; exit 0'): passed, exit code 0" in result["facts"]
    finally:
        jobs.close()


@pytest.fixture
def pytest_workspace(configured: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace with a Python package and its tests, the test command a real pytest
    (this interpreter's), and a .gitignore that ignores bytecode and caches as projects do."""
    (configured / "pkg").mkdir()
    (configured / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (configured / "tests").mkdir()
    (configured / "tests" / "test_add.py").write_text(
        "from pkg import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    (configured / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n*.pyc\n")
    git(configured, "add", ".")
    git(configured, "commit", "-q", "-m", "package")
    (configured / "app.py").write_text("print('changed again')\n")  # uncommitted, as people work
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", json.dumps(["git", "sh", sys.executable]))
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", f"{sys.executable} -m pytest -q")
    return configured


def test_a_read_only_pytest_job_leaves_the_workspace_byte_for_byte(
    pytest_workspace: Path,
) -> None:
    before = tree(pytest_workspace)
    jobs = open_jobs(Settings())
    try:
        job = jobs.create("are the tests broken?", "tests pass")
        run(jobs)
        result = jobs.get(job.id).result
        assert result is not None and result["ok"] is True, result
        assert "1 passed" in result["facts"]
        assert result["workspace"] == "unchanged"
    finally:
        jobs.close()
    after = tree(pytest_workspace)
    assert sorted(after) == sorted(before)  # no __pycache__/, no .pytest_cache/
    assert after == before  # and every byte, .git/index included


def test_a_read_only_job_that_writes_is_reported_not_ok(
    configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "sh -c 'echo x > leftover.txt; mkdir -p out'")
    jobs = open_jobs(Settings())
    try:
        job = jobs.create("does it build?")
        run(jobs)
        result = jobs.get(job.id).result
        assert result is not None and result["ok"] is False
        assert result["workspace"] == ["+ ?? leftover.txt"]
        changed = [e for e in jobs.events(job.id) if e.kind == "workspace_changed"]
        assert [e.payload["changes"] for e in changed] == [["+ ?? leftover.txt"]]
        # A write job is not held to it: it may change the workspace by design.
        write = jobs.create("does it build?", risk_level="write")
        run(jobs)
        assert "workspace" not in (jobs.get(write.id).result or {})
    finally:
        jobs.close()


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[str]:
    """A real ``git daemon`` on a loopback port serving one bare repository with a branch;
    yields its URL."""
    base = tmp_path / "served"
    base.mkdir()
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", "main", str(base / "repo.git")], check=True
    )
    port = free_port()
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            f"--base-path={base}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"git://127.0.0.1:{port}/repo.git"
    try:
        wait_for(lambda: subprocess.run(["git", "ls-remote", url], capture_output=True).returncode
                 == 0, 20, "git daemon")  # fmt: skip
        yield url
    finally:
        daemon.terminate()
        daemon.wait(10)


def test_the_remote_s_reachability_is_checked_by_name(configured: Path, git_daemon: str) -> None:
    git(configured, "remote", "add", "origin", git_daemon)
    git(configured, "push", "-q", "origin", "main")
    git(configured, "remote", "add", "gone", f"git://127.0.0.1:{free_port()}/repo.git")
    jobs = open_jobs(Settings())
    try:
        job = jobs.create("is our GitHub remote reachable?", "the remote is reachable")
        run(jobs)
        result = jobs.get(job.id).result
        assert result is not None and result["ok"] is True
        assert result["criteria"][0] == {
            "criterion": "the remote is reachable",
            "step": "remote",
            "ok": True,
        }
        assert "Remote origin: reachable, 1 branch" in result["facts"]
    finally:
        jobs.close()
    # The same job against a remote nobody answers for: a finding, not ok.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HERON_JOBS_REMOTE", "gone")
        jobs = open_jobs(Settings())
        try:
            job = jobs.create("is our GitHub remote reachable?", "the remote is reachable")
            run(jobs)
            result = jobs.get(job.id).result
            assert result is not None and result["ok"] is False
            assert result["criteria"][0]["ok"] is False
            assert "Remote gone: not reachable" in result["facts"]
        finally:
            jobs.close()
