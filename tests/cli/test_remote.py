"""``heron search`` and ``heron ask`` through a running ``heron serve`` of the same home:
the same output as in-process, and no server but the home's own is ever used.

One real ``heron serve`` in a subprocess for the module, on a home with one small
library; each command is the real ``heron`` in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron import discovery
from tests.server.conftest import free_socket, wait_healthy

PAGES = {
    "pods.md": "# Pods\n\nA Pod runs one or more containers on a node.\n\n"
    "## Restart\n\nA Pod restarts its containers when they fail.\n",
    "secrets.md": "# Secrets\n\nA Secret stores a password or a token for Pods.\n",
}
QUESTION = "how do pods restart their containers?"
#: An environment variable that is no setting: it changes the fingerprint alone, so the
#: command runs in-process beside the same server (heron.discovery.fingerprint).
ASIDE = {"HERON_TEST_ASIDE": "1"}


def heron(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "heron", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def last_path(home: Path, command: str) -> dict[str, Any]:
    return json.loads((home / "paths.json").read_text())[command]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a home with the library ``k8s`` indexed and its server running."""
    root = tmp_path_factory.mktemp("remote")
    docs = root / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    env = {"HERON_HOME": str(root / "home"), "HERON_LIBRARY_DEFAULT_DOCS": "false"}
    heron(env, "library", "add", "k8s", str(docs))
    heron(env, "index", "k8s")
    with free_socket() as sock:
        port = sock.getsockname()[1]
    log = (root / "serve.log").open("w")  # a file: a pipe nobody reads would fill and stall it
    server = subprocess.Popen(
        [sys.executable, "-m", "heron", "serve", "--port", str(port)],
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server)  # type: ignore[arg-type]
        yield env
    finally:
        server.terminate()
        server.wait(60)
        log.close()


def test_search_through_the_server_prints_what_it_prints_alone(served: dict[str, str]) -> None:
    home = Path(served["HERON_HOME"])
    for args in (["-k", "2"], ["--mode", "lexical", "--json"]):
        through = heron(served, "search", QUESTION, *args)
        assert last_path(home, "search")["path"] == "server"
        alone = heron({**served, **ASIDE}, "search", QUESTION, *args)
        assert last_path(home, "search") | {"at": 0} == {
            "path": "in-process",
            "why": "the server was started with other HERON_* settings",
            "at": 0,
        }
        assert through.stdout == alone.stdout and "(k8s, pods)" in through.stdout
    info = json.loads(heron(served, "info", "--json").stdout)["commands"]
    assert "takes heron search and heron ask" in info["server"]
    assert info["last"]["search"]["path"] == "in-process"


def _steady(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer less what differs from run to run: its times and its new session."""
    return answer | {"timings": None, "session_id": None}


def test_ask_through_the_server_answers_as_alone(served: dict[str, str]) -> None:
    home = Path(served["HERON_HOME"])
    args = (QUESTION, "--answer", "extractive")
    through = json.loads(heron(served, "ask", *args, "--json").stdout)
    assert last_path(home, "ask")["path"] == "server"
    alone = json.loads(heron({**served, **ASIDE}, "ask", *args, "--json").stdout)
    assert last_path(home, "ask")["path"] == "in-process"
    assert _steady(through) == _steady(alone)
    assert through["citations"][0]["page"] == "pods"

    def text(env: dict[str, str]) -> str:  # the last line's times differ from run to run
        return re.sub(r"[\d.]+ s|\d+ ms", "T", heron(env, "ask", *args).stdout)

    assert text(served) == text({**served, **ASIDE})
    assert "extractive: quoted from the passages" in text(served)


def test_the_server_of_another_home_is_not_used(served: dict[str, str], tmp_path: Path) -> None:
    other = {**served, "HERON_HOME": str(tmp_path / "other")}
    (tmp_path / "other").mkdir()
    # Its announcement copied, secret and all: the server still proves its own home.
    shutil.copy(Path(served["HERON_HOME"]) / discovery.FILE, tmp_path / "other")
    heron(other, "search", QUESTION, "--json", ok=False)  # an empty home: nothing found
    why = last_path(tmp_path / "other", "search")
    assert why["path"] == "in-process" and "is not this home's" in why["why"]


def test_a_stale_announcement_is_ignored(served: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "stale"
    env = {**served, "HERON_HOME": str(home)}
    home.mkdir()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    announced = discovery.read(Path(served["HERON_HOME"]))
    gone = discovery.Announcement(**{**vars(announced), "pid": int(ended.stdout)})
    fd = os.open(home / discovery.FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(gone.to_json())
    heron(env, "search", QUESTION, ok=False)
    why = last_path(home, "search")
    assert why["path"] == "in-process" and "is stale" in why["why"]


def test_an_announcement_others_may_read_or_a_symlink_is_refused(
    served: dict[str, str], tmp_path: Path
) -> None:
    real = Path(served["HERON_HOME"]) / discovery.FILE
    assert discovery.read(real.parent).pid > 0  # the running server's, 0600
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copy(real, shared / discovery.FILE)
    (shared / discovery.FILE).chmod(0o644)
    with pytest.raises(discovery.Unusable, match="readable by others"):
        discovery.read(shared)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / discovery.FILE).symlink_to(real)
    with pytest.raises(discovery.Unusable, match="cannot be opened"):
        discovery.read(linked)


def test_the_hello_proves_the_home_and_tells_nothing_else(served: dict[str, str]) -> None:
    announced = discovery.read(Path(served["HERON_HOME"]))
    said = httpx.get(f"{announced.url}/local/hello", params={"nonce": "ab" * 16}).json()
    assert set(said) == {"heron", "proof"}
    home = Path(served["HERON_HOME"])
    assert discovery.proven(announced.secret, "ab" * 16, home, said["proof"])
    assert not discovery.proven(announced.secret, "ab" * 16, home / "x", said["proof"])
    refused = httpx.get(f"{announced.url}/local/hello", params={"nonce": "not hex"})
    assert refused.status_code == 400
