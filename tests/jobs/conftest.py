"""Jobs tests: a fresh HERON_HOME, a real git repository as the workspace, and helpers to
run the real ``heron serve`` and ``heron jobs run`` processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from heron.jobs import Jobs, open_jobs

#: The test command of most tests: quick, and it says what it did.
BUILD_OK = "sh -c 'echo built; exit 0'"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository with one commit and one uncommitted change to ``app.py``."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('hi')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "init")
    (root / "app.py").write_text("print('hello')\n")
    return root


@pytest.fixture
def configured(home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings (in the environment, so subprocesses see them too) for jobs in ``workspace``."""
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(workspace))
    monkeypatch.setenv("HERON_TOOLS_COMMANDS", json.dumps(["git", "sh", "sleep"]))
    monkeypatch.setenv("HERON_JOBS_TEST_COMMAND", BUILD_OK)
    return workspace


@pytest.fixture
def jobs(configured: Path) -> Iterator[Jobs]:
    jobs = open_jobs()
    yield jobs
    jobs.close()


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone, possibly while being read
        return False
    return "State:\tZ" not in status


def wait_for(check: Callable[[], object], timeout: float = 30, what: str = "") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A real ``heron serve`` on a loopback port, its log in a file."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "heron", "serve", "--port", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=os.environ.copy(),
            )
        wait_for(self._up, 120, f"heron serve on {self.url} (log: {log})")

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"heron serve exited:\n{self.log.read_text()}")
        try:
            return httpx.get(self.url + "/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def rpc(self, method: str, **params: object) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx.post(self.url + "/rpc", json=body, timeout=30).json()

    def result(self, method: str, **params: object) -> object:
        answer = self.rpc(method, **params)
        assert "result" in answer, answer
        return answer["result"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def serve(configured: Path, tmp_path: Path) -> Iterator[Callable[[], Server]]:
    """Start real servers; each is stopped at the end of the test."""
    started: list[Server] = []

    def start() -> Server:
        started.append(Server(tmp_path / "serve.log"))
        return started[-1]

    yield start
    for server in started:
        server.stop()
