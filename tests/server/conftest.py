"""A real server on a free loopback port, over a fresh HERON_HOME holding a tiny indexed
library ``tiny`` and one indexed skill."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from heron.libraries import add_library, index_library
from heron.server import create_app
from heron.settings import Settings
from heron.skills import open_skills
from heron.store import open_store
from tests.libraries.conftest import PAGES, write_pages

#: Answers of the bundled local model are cut short: the tests check plumbing, not prose.
MAX_TOKENS = 16
SKILL = (
    "---\nname: rollback-deployment\ndescription: Roll a Kubernetes Deployment back to its "
    "previous revision safely.\n---\n1. Run kubectl rollout history.\n2. Run kubectl rollout "
    "undo.\n"
)

#: A client tool, in OpenAI's format, for the tests that send their own tools.
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def free_socket(host: str = "127.0.0.1") -> socket.socket:
    # IPPROTO_TCP spelled out: asyncio turns Nagle off (TCP_NODELAY) only on sockets that
    # say they are TCP, and with it on every reply here would wait ~40 ms for an ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


@dataclass
class Served:
    url: str
    home: Path
    settings: Settings
    server: uvicorn.Server

    def client(self, **options: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120, **options)  # type: ignore[arg-type]

    def rpc(self, method: str, params: object = None, id_: object = 1) -> dict:
        body: dict = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            body["params"] = params
        with self.client() as client:
            response = client.post("/rpc", json=body)
        assert response.status_code == 200, response.text
        return response.json()


def heron_env(tmp: Path) -> dict[str, str]:
    """Variables of an isolated Heron: its own home, skills and user home."""
    (tmp / "user").mkdir(parents=True, exist_ok=True)
    return {
        "HERON_HOME": str(tmp / "home"),
        "HERON_MODELS_DIR": str(Settings().models_dir),
        # The profile the home was built with (the suite's, tests/conftest.py).
        "HERON_EMBEDDER": Settings().embed.embedder,
        "HERON_LIBRARY_DEFAULT_DOCS": "false",
        "HERON_SKILLS_DIRS": str(tmp / "skills"),
        "HOME": str(tmp / "user"),
        "HERMES_HOME": str(tmp / "hermes"),
        "HERON_AGENT_MAX_TOKENS": str(MAX_TOKENS),
    }


def build_home(tmp: Path) -> None:
    """Index the tiny library and the skill with the library functions the CLI calls."""
    settings = Settings()
    docs = write_pages(tmp / "docs", PAGES)
    skill = tmp / "skills" / "rollback-deployment" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    add_library("tiny", str(docs), settings)
    store = open_store(settings)
    try:
        report = index_library("tiny", store, settings=settings)
        assert report.error is None, report.error
    finally:
        store.close()
    skills = open_skills(settings)
    try:
        skills.index()
    finally:
        skills.close()


@pytest.fixture(scope="module")
def heron_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("served")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in heron_env(tmp).items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        mp.delenv("HERON_API_TOKEN", raising=False)
        build_home(tmp)
        yield tmp


@contextmanager
def running(app: ASGIApp) -> Iterator[tuple[str, uvicorn.Server]]:
    """``app`` served by uvicorn in a thread of this process on a free loopback port:
    its base URL and the server, until the block ends."""
    sock = free_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()


@pytest.fixture(scope="module")
def served(heron_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``heron serve`` in a thread of this process: uvicorn on a free loopback port.

    ``library.add`` over the API takes folders under HERON_LIBRARY_ROOTS only; the tests'
    own temporary folders are that root here."""
    settings = Settings(library={"roots": [tmp_path_factory.getbasetemp()]})
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


def start_heron(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """The real ``heron`` command in a subprocess, stderr captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "heron", *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_healthy(url: str, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not become healthy")
