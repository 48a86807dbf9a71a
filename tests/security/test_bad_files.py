"""Bad files say what to do (issue 15, item 8).

Each test damages one file of a real Heron home (a library, a skill and a job indexed
once per module) or sets one bad value, then runs the real ``heron`` command: it must
exit non-zero with one message naming the file (or variable) and the fix, and no
traceback. The damaged store is also served: JSON-RPC must answer -32006 (StoreError)
with the message, not -32603 (internal error).
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from heron.db import SQLiteDatabase
from heron.jobs import JOBS, SQLJobStore
from tests.ci import missing
from tests.server.conftest import build_home, free_socket, heron_env, start_heron, wait_healthy

STORE_COMMANDS = [
    ("index",),
    ("library", "status"),
    ("search", "how do I roll back a deployment"),
    ("store", "search", "tiny", "pods"),
    ("info",),
    ("skills", "search", "roll back a deployment"),
]
#: As root, file modes bind nobody; without these capabilities they bind root too.
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with the library ``tiny``, one skill and one job, each SQLite file whole in
    its main file (no -wal), so bytes written mid-file land on real pages."""
    tmp = tmp_path_factory.mktemp("built")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in heron_env(tmp).items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        build_home(tmp)
        jobs = SQLJobStore(SQLiteDatabase(tmp / "home" / "jobs.db", JOBS))
        jobs.create("is main broken?", "", "read_only", False)
        jobs.close()
    gc.collect()  # closes the embedding cache the store leaves open
    for name in ("heron.db", "embeddings.db", "jobs.db"):
        db = sqlite3.connect(tmp / "home" / name)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
    return tmp


@dataclass
class Home:
    tmp: Path
    env: dict[str, str]

    @property
    def home(self) -> Path:
        return self.tmp / "home"

    def heron(
        self, *args: str, prefix: list[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*(prefix or []), sys.executable, "-m", "heron", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=self.env,
        )

    def fails(self, *args: str, prefix: list[str] | None = None) -> str:
        """Run ``heron ARGS``; it must fail cleanly. Returns its stderr."""
        done = self.heron(*args, prefix=prefix)
        assert done.returncode != 0, f"heron {' '.join(args)} succeeded: {done.stdout}"
        assert "Traceback" not in done.stderr + done.stdout, done.stderr
        # Progress lines (no terminal: "indexing ...") may come before the one error.
        start = done.stderr.find("error: ")
        progress = done.stderr[:start].splitlines()
        assert start >= 0 and all(line.startswith("indexing ") for line in progress), done.stderr
        assert done.stderr.count("error: ") == 1, done.stderr  # one message
        return done.stderr[start:]


@pytest.fixture
def case(built: Path, tmp_path: Path) -> Home:
    """A copy of the built home (its docs and skills too) for this test to damage."""
    tmp = tmp_path / "case"
    shutil.copytree(built, tmp, symlinks=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    env |= heron_env(tmp)
    return Home(tmp, env)


def scramble(path: Path, start: int = 4096, end: int = 8192) -> None:
    """Garbage over bytes ``start..end`` (a whole page), the header left valid."""
    with path.open("r+b") as file:
        file.seek(start)
        file.write(random.Random(15).randbytes(end - start))


def page_of(path: Path, table: str) -> int:
    """The first page of ``table`` (SQLite's dbstat), numbered from 1."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,)).fetchall()
    except sqlite3.OperationalError:
        missing(
            "this SQLite has no dbstat table to find a page by",
            "use a SQLite built with SQLITE_ENABLE_DBSTAT_VTAB",
        )
    finally:
        db.close()
    return min(row[0] for row in rows)


def says_corrupt(message: str, path: Path, then: str) -> None:
    assert f"{path} is corrupt" in message, message
    assert f"mv {path} {path}.bad" in message, message
    assert then in message, message


# -- damaged databases ---------------------------------------------------------------------


@pytest.mark.parametrize("command", STORE_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_store_with_garbage_mid_file_is_one_clear_error(
    case: Home, command: tuple[str, ...]
) -> None:
    scramble(case.home / "heron.db")
    says_corrupt(case.fails(*command), case.home / "heron.db", "heron index")


def test_damage_no_query_meets_still_stops_index_and_status(case: Home) -> None:
    """Garbage in the full-text index, which an index run with nothing changed and a
    status never read: only reading every page (quick_check) finds it."""
    db = case.home / "heron.db"
    page = page_of(db, "fts_1_data")
    scramble(db, (page - 1) * 4096, page * 4096)
    says_corrupt(case.fails("index"), db, "heron index")
    says_corrupt(case.fails("library", "status"), db, "heron index")


def test_a_store_that_is_not_a_database_is_one_clear_error(case: Home) -> None:
    (case.home / "heron.db").write_bytes(b"this is not a database, just text\n" * 200)
    message = case.fails("store", "search", "tiny", "pods")
    says_corrupt(message, case.home / "heron.db", "heron index")
    assert "file is not a database" in message


def test_a_truncated_store_is_one_clear_error(case: Home) -> None:
    db = case.home / "heron.db"
    os.truncate(db, db.stat().st_size // 2)
    says_corrupt(case.fails("library", "status"), db, "heron index")


@pytest.mark.parametrize("damage", ["garbage", "not a database", "truncated"])
def test_a_damaged_embedding_cache_is_one_clear_error(case: Home, damage: str) -> None:
    cache = case.home / "embeddings.db"
    if damage == "garbage":
        scramble(cache)
    elif damage == "truncated":
        os.truncate(cache, 6000)
    else:
        cache.write_bytes(b"not a database\n" * 300)
    message = case.fails("search", "how do I roll back a deployment")
    says_corrupt(message, cache, "it is a cache")


@pytest.mark.parametrize("damage", ["garbage", "not a database", "truncated"])
def test_a_damaged_job_store_is_one_clear_error(case: Home, damage: str) -> None:
    jobs = case.home / "jobs.db"
    if damage == "garbage":
        scramble(jobs)
    elif damage == "truncated":
        os.truncate(jobs, 6000)
    else:
        jobs.write_bytes(b"not a database\n" * 300)
    says_corrupt(case.fails("jobs", "list"), jobs, "new, empty job store")


# -- read-only databases -------------------------------------------------------------------


def as_unprivileged() -> list[str]:
    """The prefix that makes file modes bind: none for a normal user; as root, dropping
    the capabilities that let root write any file (so this is a real EACCES)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        missing(
            "as root, a read-only file needs setpriv (util-linux) to bind",
            "apt-get install util-linux",
        )
    return NO_OVERRIDE


@pytest.fixture
def writes_refused(case: Home) -> Iterator[list[str]]:
    prefix = as_unprivileged()
    yield prefix
    for path in [case.home, *case.home.iterdir()]:  # let pytest remove it
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_read_only_store_is_one_clear_error(case: Home, writes_refused: list[str]) -> None:
    db = case.home / "heron.db"
    db.chmod(0o444)
    message = case.fails("index", prefix=writes_refused)
    assert f"The store {db} is read-only" in message, message
    assert "Let the user running Heron write the file" in message


def test_a_store_in_a_read_only_folder_is_one_clear_error(
    case: Home, writes_refused: list[str]
) -> None:
    case.home.chmod(0o555)
    message = case.fails("library", "status", prefix=writes_refused)
    # The embedding cache opens first; either file must say what blocks it.
    assert "is read-only" in message, message
    assert f"its folder {case.home} is not writable" in message, message


def test_a_read_only_job_store_is_one_clear_error(case: Home, writes_refused: list[str]) -> None:
    jobs = case.home / "jobs.db"
    jobs.chmod(0o444)
    case.env["HERON_TOOLS_ROOT"] = str(case.tmp / "docs")  # jobs check a workspace
    message = case.fails("jobs", "create", "is main broken?", prefix=writes_refused)
    assert f"The job store {jobs} is read-only" in message, message


# -- the server on a damaged store -----------------------------------------------------------


def test_the_server_answers_a_damaged_store_with_a_store_error(case: Home) -> None:
    scramble(case.home / "heron.db")
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    server = start_heron(["serve", "--port", str(port)], case.env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        for method, params in [
            ("search.query", {"query": "roll back a deployment"}),
            ("library.status", {}),
            ("skills.search", {"query": "roll back a deployment"}),
        ]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer = httpx.post(f"{url}/rpc", json=body, timeout=60).json()
            error = answer.get("error") or {}
            assert error.get("code") == -32006, (method, answer)  # StoreError, not -32603
            assert f"{case.home / 'heron.db'} is corrupt" in error["message"]
            assert "heron index" in error["message"]
    finally:
        server.terminate()
        server.communicate(timeout=60)


# -- configuration files and variables -------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"models:\n  fast:\n    provider: openai\n    model: \xff\xfe\n", "line 4: not UTF-8"),
        (b"models: [fast\n", "not valid YAML"),
        (b"- fast\n- claude\n", "expected a mapping with 'models:'"),
        (b"models:\n  fast:\n    provider: [openai]\n", "provider must be a string"),
        (
            b"models:\n  fast:\n    provider: openai\n    model: gpt-4o-mini\n    fallbacks: 5\n",
            "fallbacks must be a list of model names",
        ),
        (b"modles:\n  fast: {}\n", "unknown top-level key(s) modles"),
    ],
    ids=["utf8", "yaml", "list", "type", "fallbacks", "unknown"],
)
def test_a_malformed_models_file_is_one_clear_error(
    case: Home, content: bytes, expected: str
) -> None:
    (case.home / "models.yml").write_bytes(content)
    message = case.fails("models", "list")
    assert str(case.home / "models.yml") in message and expected in message, message


@pytest.mark.parametrize(
    ("toml", "command", "expected"),
    [
        (b'server_port = ""\n', "info", "server_port in {toml}: Input should be a valid integer"),
        (b"server_port =\n", "serve", "{toml} is not valid TOML"),
        (b'embedder = "minilm"\nskills_dirs = "\xff"\n', "models", "{toml} is not UTF-8"),
        (b'tools_root = ""\n', "info", "tools_root in {toml}: must not be empty"),
    ],
    ids=["empty-port", "no-value", "utf8", "empty-path"],
)
def test_a_malformed_heron_toml_is_one_clear_error(
    case: Home, toml: bytes, command: str, expected: str
) -> None:
    path = case.home / "heron.toml"
    path.write_bytes(toml)
    args = {"info": ["info"], "serve": ["serve"], "models": ["models", "list"]}[command]
    message = case.fails(*args)
    assert expected.format(toml=path) in message, message
    assert "remove" in message or "Fix" in message or "Save it as UTF-8" in message


def test_an_empty_home_in_heron_toml_is_refused(case: Home) -> None:
    """``home = ""`` would be the current directory: Heron would write its databases
    wherever it happens to be started."""
    config = case.tmp / "heron.toml"
    config.write_text('home = ""\n')
    del case.env["HERON_HOME"]
    case.env["HERON_CONFIG"] = str(config)
    message = case.fails("info")
    assert f"home in {config}: must not be empty" in message, message
    assert not (Path.cwd() / "heron.db").exists()


@pytest.mark.parametrize(
    ("name", "value", "command", "expected"),
    [
        (
            "HERON_TOOLS_COMMANDS",
            "git,ls",
            "info",
            """HERON_TOOLS_COMMANDS='["git", "ls"]'""",
        ),
        ("HERON_TOOLS_COMMANDS", "", "info", "not JSON"),
        ("HERON_SERVER_PORT", "abc", "serve", "HERON_SERVER_PORT: Input should be a valid"),
        ("HERON_TOOLS_ROOT", "", "info", "HERON_TOOLS_ROOT: must not be empty"),
    ],
    ids=["list-not-json", "empty-list", "port", "empty-root"],
)
def test_a_bad_variable_is_one_clear_error(
    case: Home, name: str, value: str, command: str, expected: str
) -> None:
    case.env[name] = value
    message = case.fails(command)
    assert expected in message, message
    assert "unset it" in message


# -- the command's last line of defence -------------------------------------------------------

EXPLODE = """
import sys
from heron.cli.app import app

@app.command("explode")
def explode() -> None:
    raise RuntimeError("boom; the key was api_key=sk-abcdefghijklmnopqrstuvwx")

sys.argv = ["heron", "explode"]
app()
"""


def test_an_unexpected_error_is_a_short_message_with_how_to_see_more(case: Home) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EXPLODE], capture_output=True, text=True, env=case.env
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: unexpected RuntimeError: boom"), done.stderr
    assert "HERON_DEBUG=1" in done.stderr
    assert "sk-abcdefghijklmnopqrstuvwx" not in done.stderr  # an unplanned message is redacted
    debug = subprocess.run(
        [sys.executable, "-c", EXPLODE],
        capture_output=True,
        text=True,
        env=case.env | {"HERON_DEBUG": "1"},
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr
