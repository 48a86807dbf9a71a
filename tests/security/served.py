"""A real ``heron serve`` (uvicorn on a loopback port, in a thread) over a fresh
HERON_HOME with the environment a test gives it: the attacks of ``tests/security`` go
through the same ``/rpc`` a web page or a local process would reach."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from heron.server import create_app
from heron.settings import Settings
from tests.server.conftest import Served, heron_env, running


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


@pytest.fixture(scope="module")
def bare_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh HERON_HOME with nothing indexed, its isolating variables set: for attacks
    on the server's edge, which need a server and no data (``tests.server.conftest``'s
    ``heron_home`` indexes a library first)."""
    tmp = tmp_path_factory.mktemp("bare")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in heron_env(tmp).items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        mp.delenv("HERON_API_TOKEN", raising=False)
        yield tmp


@contextlib.contextmanager
def serve(tmp: Path, env: Mapping[str, str]) -> Iterator[Served]:
    """Serve over ``tmp`` with ``env`` set (and the isolating variables of
    ``tests.server.conftest.heron_env``); stopped on leaving."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {**heron_env(tmp), **env}.items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        mp.delenv("HERON_API_TOKEN", raising=False)
        settings = Settings()
        with running(create_app(settings)) as (url, server):
            yield Served(url, tmp / "home", settings, server)
