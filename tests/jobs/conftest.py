"""Jobs tests: a fresh HERON_HOME, a real git repository as the workspace, helpers to run
the real ``heron serve`` and ``heron jobs run`` processes, and ``backend``: every job store
backend in turn (a SQLite file, a database on a real PostgreSQL) for the contract tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.db import Database, Schema, SQLiteDatabase
from heron.jobs import JOBS, Jobs, JobStore, SQLJobStore, open_jobs
from heron.settings import Settings
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

#: The test command of most tests: quick, and it says what it did.
BUILD_OK = "sh -c 'echo built; exit 0'"


#: Python that opens the store of ``sys.argv[1:3]`` (a ``Backend``'s kind and location) as
#: ``store``: the start of a script a test runs as a separate process.
OPEN_STORE = """
import sys
from pathlib import Path
kind, location = sys.argv[1], sys.argv[2]
from heron.jobs import JOBS, SQLJobStore
from heron.settings import Settings
if kind == "sqlite":
    from heron.db import Database, Schema, SQLiteDatabase
    store = SQLJobStore(SQLiteDatabase(Path(location), JOBS))
else:
    from heron.db.postgres import PostgresDatabase
    store = SQLJobStore(PostgresDatabase(location, JOBS))
"""


@dataclass(frozen=True)
class Backend:
    """One database for job stores: its kind and where it is (a file, or a URL)."""

    kind: str
    location: str

    def open(self, *, event_max_bytes: int = 16_000, **options: Any) -> JobStore:
        """A new store on this database (as another process or server would open it);
        ``options`` go to ``PostgresDatabase``."""
        return SQLJobStore(self.database(JOBS, **options), event_max_bytes=event_max_bytes)

    def database(self, schema: Schema, **options: Any) -> Database:
        """A new database for ``schema`` on this backend."""
        if self.kind == "sqlite":
            return SQLiteDatabase(Path(self.location), schema)
        from heron.db.postgres import PostgresDatabase

        return PostgresDatabase(self.location, schema, **options)

    def argv(self, script: str, *args: str) -> list[str]:
        """The command that runs ``OPEN_STORE + script`` on this database with ``args``."""
        return [sys.executable, "-c", OPEN_STORE + script, self.kind, self.location, *args]

    def stored(self) -> bytes:
        """All that the database holds of the job store: the SQLite file with its log as
        they are on disk, or every row of PostgreSQL's job tables as text."""
        if self.kind == "sqlite":
            path = Path(self.location)
            wal = path.with_name(path.name + "-wal")
            return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
        import psycopg

        with psycopg.connect(self.location) as conn:
            rows = conn.execute(
                "SELECT j::text FROM heron_jobs j UNION ALL SELECT e::text FROM heron_job_events e"
            ).fetchall()
        return "\n".join(row[0] for row in rows).encode()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each backend in turn; PostgreSQL's side starts the test server (``tests.postgres``)."""
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "jobs.db"))
    return Backend("postgres", request.getfixturevalue("pg_url"))


@pytest.fixture
def job_store(backend: Backend) -> Iterator[JobStore]:
    """A store on ``backend`` whose payloads are cut at 2,000 bytes."""
    store = backend.open(event_max_bytes=2_000)
    yield store
    store.close()


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


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (``.git`` included) and its bytes: what "unchanged" means."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.fixture
def jobs(configured: Path) -> Iterator[Jobs]:
    """The jobs of ``configured``. Afterwards, every read-only job that completed must
    have found the workspace unchanged (the runner's own check, ``result.workspace``): a
    test whose job writes on purpose opens its own ``Jobs``."""
    jobs = open_jobs(Settings())
    yield jobs
    try:
        for job in jobs.list(["completed"], limit=10_000):
            if job.risk_level == "read_only":
                assert job.result is not None and job.result.get("workspace") == "unchanged", (
                    f"read-only job {job.id} ({job.prompt!r}) changed the workspace: "
                    f"{job.result and job.result.get('workspace')}"
                )
    finally:
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
