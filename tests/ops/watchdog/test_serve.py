"""A real ``heron serve`` killed while ``heron watchdog --interval`` watches it, brought
back by the check's command remedy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from heron.ops.watchdog import history_path
from heron.settings import Settings
from tests.server.conftest import free_socket, start_heron

START = Path(__file__).with_name("start_server.py")


def history(settings: Settings) -> list[dict]:
    path = history_path(settings.home)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(
    settings: Settings, ready: Callable[[list[dict]], bool], timeout: float = 90
) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = history(settings)
        if ready(lines):
            return lines
        time.sleep(0.2)
    raise AssertionError(f"not seen in time; history: {json.dumps(history(settings))[-3000:]}")


def test_a_killed_server_is_restarted_by_its_remedy(settings: Settings, tmp_path: Path) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    pid_file, log = tmp_path / "heron.pid", tmp_path / "serve.log"
    start = [sys.executable, str(START), str(port), str(pid_file), str(log)]
    yml = tmp_path / "watchdog.yml"
    yml.write_text(
        f"""
checks:
  - {{name: server-process, kind: process, pid_file: {pid_file}, failure_threshold: 1}}
  - name: server
    kind: http
    url: http://127.0.0.1:{port}/health
    conditions: ["[STATUS] == 200", "[BODY].status == ok"]
    timeout: 2
    failure_threshold: 1
    remedy: {{kind: command, argv: {json.dumps(start)}, environment: ["HERON_*"]}}
"""
    )
    env = {"HERON_LIBRARY_DEFAULT_DOCS": "false"}
    subprocess.run(start, check=True, env={**os.environ, **env}, timeout=90)
    first = int(pid_file.read_text())
    watcher = start_heron(["watchdog", "--interval", "1s", "--config", str(yml)], env)
    try:
        wait_for(settings, lambda lines: any(line["ok"] for line in lines))
        os.kill(first, signal.SIGKILL)  # mid-run: the watchdog loop is going
        seen = len(history(settings))

        def recovered(lines: list[dict]) -> bool:
            later = lines[seen:]
            fixed = [i for i, line in enumerate(later) for a in line["actions"]
                     if a["action"] == "remedy"]  # fmt: skip
            return bool(fixed) and any(line["ok"] for line in later[fixed[0] + 1 :])

        lines = wait_for(settings, recovered)[seen:]
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.communicate(timeout=60)
        second = int(pid_file.read_text())
        os.kill(second, signal.SIGTERM)
    failed = next(line for line in lines if not line["ok"])
    assert failed["checks"]["server"]["status"] == "firing"
    assert "cannot connect" in failed["checks"]["server"]["detail"]
    assert failed["checks"]["server-process"]["status"] == "firing"
    [remedy] = [a for a in failed["actions"] if a["action"] == "remedy"]
    assert remedy["ok"] and remedy["argv"] == start and remedy["check"] == "server"
    assert second != first and health.json() == {"status": "ok"}
    assert lines[-1]["checks"]["server"]["status"] == "ok"
    assert lines[-1]["checks"]["server-process"]["status"] == "ok"
