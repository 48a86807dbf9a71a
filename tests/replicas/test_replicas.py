"""Two real replicas on one real PostgreSQL (issue 47): two ``heron serve`` processes,
each with its own HERON_HOME and replica name (as two containers would have), one
``HERON_DATABASE_URL``. One module-scoped pair, started once; the test that kills a
replica runs last."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from heron.jobs.runner import HEARTBEAT
from heron.settings import Settings
from tests.jobs.conftest import alive, free_port, git, wait_for
from tests.postgres import database_url, pg_server  # noqa: F401 (the session's server)

#: Seconds without a heartbeat before a replica's job is taken over: short, so the test
#: is; the default (20 s) is what ``bench replicas`` measures.
VISIBILITY = 6


@dataclass
class Replica:
    """A real ``heron serve`` on a loopback port, with its own home and log."""

    name: str
    home: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""

    def start(self) -> Replica:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        log = self.home.with_suffix(".log")
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "heron", "serve", "--port", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        wait_for(lambda: self._up(log), 120, f"replica {self.name} (log: {log})")
        return self

    def _up(self, log: Path) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"replica {self.name} exited:\n{log.read_text()}")
        try:
            return httpx.get(self.url + "/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def result(self, method: str, **params: object) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = httpx.post(self.url + "/rpc", json=body, timeout=60).json()
        assert "result" in answer, answer
        return answer["result"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def database(pg_server: str) -> Iterator[str]:  # noqa: F811 (the fixture above)
    name = f"heron_replicas_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(pg_server, name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def replicas(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    """Replicas ``a`` and ``b``: separate homes, one database, one workspace (a git
    repository, as a shared volume would be), a build that sleeps (a job mid-step)."""
    root = tmp_path_factory.mktemp("replicas")
    workspace = root / "repo"
    workspace.mkdir()
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "app.py").write_text("print('hi')\n")
    git(workspace, "add", "app.py")
    git(workspace, "commit", "-q", "-m", "init")
    docs = root / "docs" / "teamdocs"  # a folder both replicas reach, as a shared volume
    docs.mkdir(parents=True)
    (docs / "deploys.md").write_text(
        "# Deploys\n\nThe team deploys the heron service every Tuesday with blue-green "
        "switching behind the load balancer.\n"
    )
    (docs / "oncall.md").write_text(
        "# On-call\n\nThe on-call engineer answers pages within fifteen minutes.\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    base |= {
        "HERON_EMBEDDER": "minilm",
        "HERON_MODELS_DIR": str(Settings().models_dir),
        "HERON_DATABASE_URL": database,
        "HERON_TOOLS_ROOT": str(workspace),
        "HERON_TOOLS_COMMANDS": '["git", "sh", "sleep"]',
        "HERON_JOBS_TEST_COMMAND": "sh -c 'sleep 60 & wait'",
        "HERON_JOBS_VISIBILITY_TIMEOUT": str(VISIBILITY),
        "HERON_JOBS_CONCURRENCY": "1",
        "HERON_LIBRARY_ROOTS": json.dumps([str(root / "docs")]),
        "HERON_LIBRARY_DEFAULT_DOCS": "false",
    }
    pair = [
        Replica(name, root / name, base | {"HERON_HOME": str(root / name), "HERON_REPLICA": name})
        for name in ("replica-a", "replica-b")
    ]
    try:
        for replica in pair:
            replica.start()
        yield pair
    finally:
        for replica in pair:
            replica.stop()


def events(replica: Replica, job_id: str) -> list[dict[str, Any]]:
    return replica.result("jobs.events", id=job_id)


def stream(url: str, *, post: dict[str, Any] | None = None, last: str = "") -> list[tuple]:
    """A /chat/stream's events as ``(id, event, data)``: all of them, or (``post``) up
    to its first, then the connection dropped as a client's that goes away."""
    headers = {"Last-Event-ID": last} if last else {}
    method = "POST" if post is not None else "GET"
    events: list[tuple] = []
    with httpx.stream(method, url, json=post, headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
                continue
            if "event" in fields:
                events.append((fields["id"], fields["event"], json.loads(fields["data"])))
                if post is not None or fields["event"] in ("final", "error"):
                    break
            fields = {}
    return events


def test_a_conversation_and_its_stream_go_on_on_the_other_replica(
    replicas: list[Replica],
) -> None:
    """A conversation started on a is continued on b with its first turn; a /chat/stream
    started on a and dropped is resumed on b, event for event as a has it; an id no one
    started is b's 404."""
    a, b = replicas
    first = a.result("agent.chat", message="When does the team deploy?")
    session = first["session_id"]
    b.result("agent.chat", message="And who answers the pages?", session_id=session)
    asked = [turn["message"] for turn in a.result("agent.history", session_id=session)]
    assert asked == ["When does the team deploy?", "And who answers the pages?"]

    started = stream(a.url + "/chat/stream", post={"message": "Who is on call?"})
    assert started[0][1] == "stream"
    sid = started[0][2]["stream_id"]
    on_b = stream(f"{b.url}/chat/stream/{sid}", last=f"{sid}:1")
    on_a = stream(f"{a.url}/chat/stream/{sid}", last=f"{sid}:1")
    assert on_b == on_a and on_b[-1][1] == "final", on_b
    assert on_b[0][0] == f"{sid}:2"
    gone = httpx.get(f"{b.url}/chat/stream/nope", timeout=10)
    assert gone.status_code == 404


def test_a_library_added_on_one_replica_is_every_replicas(
    replicas: list[Replica], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Added and indexed through a, listed and searched through b (the records and the
    catalogue are the database's), removed through b, gone from a's list."""
    a, b = replicas
    folder = next(tmp_path_factory.getbasetemp().glob("replicas*/docs/teamdocs"))
    a.result("library.add", name="teamdocs", source=str(folder))
    indexed = a.result("library.index", name="teamdocs")
    assert indexed[0]["library"] == "teamdocs", indexed
    assert [lib["name"] for lib in b.result("library.list")] == ["teamdocs"]
    found = b.result("search.query", query="when does the team deploy?", library="teamdocs")
    assert found and found[0]["page"] == "deploys" and "Tuesday" in found[0]["snippet"], found
    b.result("library.remove", name="teamdocs")
    assert a.result("library.list") == []


def test_a_keys_limit_is_counted_across_replicas(replicas: list[Replica]) -> None:
    """A key limited to 5 requests a minute, its requests spread over both replicas: 5
    are served, the rest refused as over the limit (was 5 per replica)."""
    token = replicas[0].result("keys.create", name="ci", scopes=["read"], rpm=5)["token"]
    codes = []
    for n in range(10):
        body = {"jsonrpc": "2.0", "id": n, "method": "library.list"}
        answer = httpx.post(
            replicas[n % 2].url + "/rpc",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        codes.append(answer.json().get("error", {}).get("code", 200))
    assert codes.count(200) == 5 and codes.count(-32029) == 5, codes


def test_doctor_and_ready_name_the_live_replicas(replicas: list[Replica]) -> None:
    """heron doctor (a third process on the database) and /ready on either replica name
    both live replicas with their version, the database, and what stays per replica."""
    a, b = replicas
    env = a.env | {"HERON_HOME": str(a.home.with_name("doctor"))}
    done = subprocess.run(
        [sys.executable, "-m", "heron", "doctor", "--check", "replicas", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    (check,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "replicas"]
    assert check["status"] == "ok", check
    assert sorted(r["name"] for r in check["data"]["replicas"]) == ["replica-a", "replica-b"]
    assert "library clones" in check["data"]["not_shared"]
    assert "response cache" in check["detail"]
    ready = httpx.get(b.url + "/ready", timeout=30).json()["checks"]["replicas"]
    assert ready["this"] == "replica-b" and len(ready["versions"]) == 1
    assert sorted(r["name"] for r in ready["replicas"]) == ["replica-a", "replica-b"]
    assert ready["database"].endswith(a.env["HERON_DATABASE_URL"].rsplit("/", 1)[1])


def test_a_killed_replicas_job_is_taken_over_by_the_other(replicas: list[Replica]) -> None:
    """SIGKILL the replica whose job runs a command: the other, which never ran it and
    shares no host name with it (the dead worker is judged by its heartbeat alone),
    fails the job with the reason within the visibility timeout (a command may have
    written: it is not rerun), and runs the job queued behind it."""
    a = replicas[0]
    build = a.result("jobs.create", prompt="is the build broken?")["id"]

    def command_pid() -> int | None:
        started = [e for e in events(a, build) if e["kind"] == "step_started"]
        return next((e["payload"]["pid"] for e in started if e["payload"]["step"] == "test"), None)

    pid = int(wait_for(command_pid, 60, "the build's command to start"))  # type: ignore[arg-type]
    worker = a.result("jobs.get", id=build)["worker"]
    holder, survivor = sorted(replicas, key=lambda r: not worker.startswith(r.name + ":"))
    assert worker.startswith(holder.name + ":")
    assert holder.proc is not None
    holder.proc.send_signal(signal.SIGKILL)
    holder.proc.wait()
    killed = time.monotonic()
    queued = survivor.result("jobs.create", prompt="what changed this week?")["id"]

    def state(job_id: str) -> str:
        return survivor.result("jobs.get", id=job_id)["state"]

    wait_for(lambda: state(build) != "running", 30, "the survivor to take the build over")
    took = time.monotonic() - killed
    last = events(survivor, build)[-1]
    assert last["kind"] == "failed" and state(build) == "failed", last
    reason = last["payload"]["reason"]
    assert f"its worker {worker} sent no heartbeat for over {VISIBILITY} s" in reason, reason
    assert "not retried: it runs a command that may write" in reason, reason
    assert last["payload"]["by"].startswith(survivor.name + ":")
    # Silent since its last beat (up to HEARTBEAT s before the kill) for the timeout.
    assert VISIBILITY - HEARTBEAT - 0.5 < took < 30, took
    wait_for(lambda: state(queued) == "completed", 30, "the survivor to run the next job")
    os.killpg(pid, signal.SIGKILL)  # the dead replica's command: a container's end kills it
    wait_for(lambda: not alive(pid), 10, "the dead replica's command to end")
