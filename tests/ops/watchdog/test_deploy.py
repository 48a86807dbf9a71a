"""Sync-deploy against a local bare git remote: a good commit is deployed, a broken one
rolled back with an alert and not tried again, a dirty checkout left alone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from heron.settings import Settings
from tests.ops.watchdog.conftest import alerts_of, appender, python, watchdog
from tests.test_notify import Hook

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_GLOBAL": "/dev/null"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(work: Path, healthy: bool, message: str) -> str:
    """A release whose check passes (``healthy``) or fails, pushed to the remote."""
    (work / "healthy.txt").write_text("yes\n" if healthy else "no\n")
    (work / "version.txt").write_text(message)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", message)
    git(work, "push", "-q", "origin", "HEAD:main")
    return git(work, "rev-parse", "HEAD")


@pytest.fixture
def settings(home: Path) -> Settings:
    """Every run runs the deploy check (its own interval, 2 minutes by default, is tested
    in test_intervals)."""
    return Settings(library={"default_docs": False}, ops={"watchdog_deploy_interval": 0.001})


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path, str]:
    """The developer's clone, the deployed checkout (both of one bare remote), and the
    first commit."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(remote), str(work))
    (work / "build.py").write_text("open('build.out', 'w').write(open('healthy.txt').read())\n")
    (work / ".gitignore").write_text("build.out\n")
    first = commit(work, True, "first")
    deployed = tmp_path / "deployed"
    git(tmp_path, "clone", "-q", str(remote), str(deployed))
    return work, deployed, first


def config(deployed: Path, hook: Hook, restarts: Path) -> str:
    healthy = python("raise SystemExit(open('build.out').read().strip() != 'yes')")
    return f"""
alerts: ["{hook.url}"]
checks:
  - name: app
    kind: command
    cwd: {deployed}
    argv: {json.dumps(healthy)}
  - name: release
    kind: deploy
    path: {deployed}
    build: {json.dumps(python("exec(open('build.py').read())"))}
    restart: {json.dumps(appender(restarts))}
    checks: [app]
    check_attempts: 2
    check_wait: 0.1
"""


def test_a_good_commit_is_deployed_and_a_broken_one_rolled_back_with_an_alert(
    settings: Settings, repos: tuple[Path, Path, str], hook: Hook, tmp_path: Path
) -> None:
    work, deployed, _ = repos
    restarts = tmp_path / "restarts.log"
    yml = config(deployed, hook, restarts)
    (deployed / "build.out").write_text("yes\n")  # the first release, built by hand

    quiet = watchdog(settings, yml).run_once()
    assert quiet["ok"] and "up to date" in quiet["checks"][1]["detail"]

    good = commit(work, True, "good")
    report = watchdog(settings, yml).run_once()
    release = report["checks"][1]
    assert release["ok"] and f"deployed {good[:12]}" in release["detail"]
    assert git(deployed, "rev-parse", "HEAD") == good
    assert [a["action"] for a in release["actions"]] == ["deploy", "build", "restart", "verify"]
    assert restarts.read_text().count("ran") == 1

    broken = commit(work, False, "broken")
    report = watchdog(settings, yml).run_once()
    release = report["checks"][1]
    assert not release["ok"] and release["status"] == "firing"
    assert git(deployed, "rev-parse", "HEAD") == good  # rolled back
    assert (deployed / "build.out").read_text() == "yes\n"  # and the old release rebuilt
    steps = [a["action"] for a in release["actions"]]
    assert steps == ["deploy", "build", "restart", "verify", "clean", "build", "restart",
                     "verify", "rollback", "alert"]  # fmt: skip
    rollback = next(a for a in release["actions"] if a["action"] == "rollback")
    assert (rollback["from"], rollback["to"], rollback["healthy"]) == (broken, good, True)
    [alert] = hook.received
    assert "[FIRING]" in alert["title"] and "release" in alert["title"]
    assert f"rolled back to {good[:12]}" in alert["message"]

    # The broken commit is not tried again; the incident stays open, alerted once.
    again = watchdog(settings, yml).run_once()
    assert "failed its checks and was rolled back" in again["checks"][1]["detail"]
    assert alerts_of(again) == [] and len(hook.received) == 1
    assert restarts.read_text().count("ran") == 3  # good, broken, its rollback

    fixed = commit(work, True, "fixed")
    report = watchdog(settings, yml).run_once()
    assert git(deployed, "rev-parse", "HEAD") == fixed
    assert alerts_of(report) == ["resolved"] and "[RESOLVED]" in hook.received[1]["title"]


def test_a_checkout_with_local_changes_is_not_deployed(
    settings: Settings, repos: tuple[Path, Path, str], hook: Hook, tmp_path: Path
) -> None:
    work, deployed, first = repos
    (deployed / "build.py").write_text("# edited on the server\n")
    commit(work, True, "new")
    report = watchdog(settings, config(deployed, hook, tmp_path / "r.log")).run_once()
    release = report["checks"][1]
    assert not release["ok"] and "local changes" in release["detail"]
    assert git(deployed, "rev-parse", "HEAD") == first
    assert (deployed / "build.py").read_text() == "# edited on the server\n"


def test_a_rewritten_remote_is_not_followed(
    settings: Settings, repos: tuple[Path, Path, str], hook: Hook, tmp_path: Path
) -> None:
    work, deployed, first = repos
    git(work, "commit", "-q", "--amend", "-m", "rewritten")
    git(work, "push", "-q", "-f", "origin", "HEAD:main")
    report = watchdog(settings, config(deployed, hook, tmp_path / "r.log")).run_once()
    assert "is not a fast-forward" in report["checks"][1]["detail"]
    assert git(deployed, "rev-parse", "HEAD") == first
