"""A real ``heron serve`` (uvicorn on a loopback port, in a thread) over a fresh
HERON_HOME with the environment a test gives it: the attacks of ``tests/security`` go
through the same ``/rpc`` a web page or a local process would reach."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import uvicorn

from heron.server import create_app
from heron.settings import Settings
from tests.server.conftest import Served, free_socket, heron_env


def git(root: Path, *args: str) -> str:
    """Plain git, as the repository's owner runs it (not through Heron)."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def make_repo(root: Path) -> Path:
    """A git repository with two commits of ``notes.txt`` and an uncommitted change."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "notes.txt").write_text("first\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-q", "-m", "first")
    (root / "notes.txt").write_text("first\nsecond\n")
    git(root, "commit", "-q", "-am", "second")
    (root / "notes.txt").write_text("first\nsecond\nthird\n")
    return root


@contextlib.contextmanager
def serve(tmp: Path, env: Mapping[str, str]) -> Iterator[Served]:
    """Serve over ``tmp`` with ``env`` set (and the isolating variables of
    ``tests.server.conftest.heron_env``); stopped on leaving."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {**heron_env(tmp), **env}.items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        mp.delenv("HERON_API_TOKEN", raising=False)
        sock = free_socket()
        settings = Settings()
        config = uvicorn.Config(
            create_app(settings), lifespan="on", log_config=None, access_log=False
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 120
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        try:
            port = sock.getsockname()[1]
            yield Served(f"http://127.0.0.1:{port}", tmp / "home", settings, server)
        finally:
            server.should_exit = True
            thread.join(60)
            sock.close()
