"""The real ``heron jobs`` command, and a real ``heron jobs run`` worker killed with -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from heron.jobs import Jobs
from tests.jobs.conftest import alive, wait_for
from tests.run_heron import run_heron


def heron(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    return run_heron("jobs", *args, ok=ok)


def test_create_list_show_watch_and_decide(jobs: Jobs) -> None:
    created = json.loads(
        heron("create", "deploy the fix", "--risk-level", "deploy_allowed", "--json").stdout
    )
    assert created["state"] == "queued" and created["requires_confirmation"] is True
    plain = json.loads(heron("create", "what changed this week?", "--json").stdout)
    listed = json.loads(heron("list", "--json").stdout)
    assert [j["id"] for j in listed] == [plain["id"], created["id"]]
    ran = json.loads(heron("run", "--until-idle", "--json").stdout)
    assert ran["ran"] == 2 and ran["recovered"] == []
    waiting = json.loads(heron("list", "--state", "waiting_for_confirmation", "--json").stdout)
    assert [j["id"] for j in waiting] == [created["id"]]
    confirmed = json.loads(heron("confirm", created["id"], "--by", "alice", "--json").stdout)
    assert confirmed["state"] == "queued" and confirmed["confirmed_by"] == "alice"
    heron("run", "--until-idle")
    shown = json.loads(heron("show", created["id"], "--json").stdout)
    assert shown["state"] == "completed"
    assert [e["kind"] for e in shown["events"]][-1] == "completed"
    watched = [
        json.loads(line) for line in heron("watch", created["id"], "--json").stdout.splitlines()
    ]
    assert [e["seq"] for e in watched] == [e["seq"] for e in shown["events"]]
    later = heron("watch", created["id"], "--after", "3", "--json").stdout.splitlines()
    assert [json.loads(line)["seq"] for line in later] == [e["seq"] for e in shown["events"][3:]]
    human = heron("show", plain["id"]).stdout
    assert "completed" in human and "git_status" in human


def test_errors_are_clean_and_say_what_to_do(jobs: Jobs) -> None:
    missing = heron("show", "nope", ok=False)
    assert missing.returncode == 1 and "heron jobs list" in missing.stderr
    assert "Traceback" not in missing.stderr
    job = json.loads(heron("create", "what changed?", "--json").stdout)
    heron("abort", job["id"])
    again = heron("abort", job["id"], ok=False)
    assert again.returncode == 1 and "it has finished" in again.stderr
    denied = heron("deny", job["id"], ok=False)
    assert "is aborted, not waiting_for_confirmation" in denied.stderr
    bad = heron("create", "x", "--risk-level", "yolo", ok=False)
    assert "Choose from: read_only, write, deploy_allowed" in bad.stderr


def test_worker_killed_mid_job_then_restarted(
    jobs: Jobs, configured: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", "sh -c 'sleep 60 & wait'")
    monkeypatch.setenv("HERON_JOBS_CONCURRENCY", "1")
    build = jobs.create("is the build broken?")
    queued = jobs.create("what changed this week?")
    worker = subprocess.Popen(
        [sys.executable, "-m", "heron", "jobs", "run"],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "worker.log", "wb"),  # noqa: SIM115 -- closed with the process
    )

    def test_started() -> int | None:
        return next(
            (e.payload["pid"] for e in jobs.events(build.id) if e.payload.get("step") == "test"),
            None,
        )

    pid = int(wait_for(test_started, 60, "the worker to start the build"))  # type: ignore[arg-type]
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    assert jobs.get(build.id).state == "running"  # what a crash leaves behind
    assert alive(pid)  # its command outlived it, in its own session
    restarted = json.loads(heron("run", "--until-idle", "--json").stdout)
    assert restarted["recovered"] == [build.id]
    failed = jobs.get(build.id)
    assert failed.state == "failed" and failed.worker is None
    events = jobs.events(build.id)
    assert [e.kind for e in events][-2:] == ["step_killed", "failed"]
    assert f"process {worker.pid}" in events[-1].payload["reason"]
    wait_for(lambda: not alive(pid), 5, "the orphaned build to be killed")
    assert jobs.get(queued.id).state == "completed"
    assert [j.state for j in jobs.list()] == ["completed", "failed"]
