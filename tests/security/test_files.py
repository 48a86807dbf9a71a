"""The file tools cannot be raced, tricked by special files or made to write executable
config: each attack tries to read or write outside the workspace (or to hang Heron), and
what lies outside must stay unread and unwritten."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from heron.core.errors import ToolError, ToolInputError
from heron.core.workspace import Workspace
from heron.programs import load_policy
from heron.tools import ToolRegistry
from heron.tools.builtin import register_builtins
from tests.run_heron import run_heron
from tests.security.served import Served, serve

SECRET = "outside secret"
#: Seconds each race runs; long enough for many thousand swaps on two cores.
RACE = 2.0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET)
    (outside / "outside-only.txt").write_text(SECRET)
    return root


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root, policy=load_policy(None))


#: The swapper: another process (so it truly runs beside Heron, not between its
#: bytecodes) that keeps swapping ``d`` between the real folder and a symlink to the
#: outside, and writes how many swaps it made when stopped.
SWAPPER = r"""
import os, shutil, signal, sys
root, count = sys.argv[1], sys.argv[2]
d, real, link = (os.path.join(root, n) for n in ("d", "d.real", "d.link"))
swaps = 0
def stop(*_):
    with open(count, "w") as out:
        out.write(str(swaps))
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    try:
        os.rename(d, real); os.rename(link, d); os.rename(d, link); os.rename(real, d)
    except OSError:  # write_file made a fresh d while the real one was away: put it back
        try:
            if os.path.islink(d):
                os.rename(d, link)
            if os.path.exists(real):
                if os.path.exists(d):
                    shutil.rmtree(d)
                os.rename(real, d)
        except OSError:
            pass
    swaps += 1
"""


@pytest.fixture
def swapping(root: Path, tmp_path: Path) -> Iterator[Callable[[], int]]:
    """The swapper running; yields a function that stops it and says how often it swapped."""
    (root / "d.link").symlink_to(tmp_path / "outside")
    count = tmp_path / "swaps"
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(count)])

    def stop() -> int:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        return int(count.read_text()) if count.exists() else 0

    yield stop
    stop()


def race(step: Callable[[], None], swaps: Callable[[], int]) -> int:
    """Run ``step`` for ``RACE`` seconds while the swapper works; how often it ran."""
    deadline = time.monotonic() + RACE
    runs = 0
    while time.monotonic() < deadline:
        with contextlib.suppress(ToolError, ToolInputError):  # refused mid-swap: fine
            step()
        runs += 1
    assert swaps() > 1000, "the swapper hardly ran; the race proves nothing"
    return runs


def test_a_swapped_symlink_never_reads_outside(ws: Workspace, swapping: Callable[[], int]) -> None:
    seen: set[str] = set()

    def read() -> None:
        seen.add(ws.read_file("d/f.txt")["content"])

    race(read, swapping)
    assert SECRET not in seen
    assert seen <= {"inside"}


def test_a_swapped_symlink_never_writes_outside(
    ws: Workspace, swapping: Callable[[], int], tmp_path: Path
) -> None:
    counter = [0]

    def write() -> None:
        counter[0] += 1
        ws.write_file(f"d/new-{counter[0]}.txt", "x")
        ws.write_file("d/f.txt", "inside")  # over an existing file too

    race(write, swapping)
    outside = tmp_path / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt", "outside-only.txt"]
    assert (outside / "f.txt").read_text() == SECRET


def test_a_swapped_symlink_never_lists_outside(ws: Workspace, swapping: Callable[[], int]) -> None:
    listed: set[str] = set()

    def list_() -> None:
        listed.update(ws.list_files(".", recursive=True))
        listed.update(ws.list_files("d"))

    race(list_, swapping)
    assert not any("outside-only" in entry for entry in listed)


def test_the_old_name_check_loses_the_race(root: Path, swapping: Callable[[], int]) -> None:
    """Check-then-open, as the file tools did before: resolve the name, then open it.
    The race above is real: this version reads outside within the same time."""

    def read() -> str:
        target = (root / "d" / "f.txt").resolve()
        if not target.is_relative_to(root.resolve()):
            raise ToolInputError("outside")
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as handle:
            return handle.read()

    deadline = time.monotonic() + RACE * 3
    while time.monotonic() < deadline:
        try:
            if read() == SECRET:
                return
        except (OSError, ToolInputError):
            pass
    pytest.fail("the unsafe version never lost the race; the race tests prove little here")


def in_thread(call: Callable[[], object], timeout: float = 5.0) -> BaseException | None:
    """Run ``call`` in a thread; fail if it has not returned within ``timeout`` s (a
    FIFO opened blocking would hang there forever)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert outcome, f"the call did not return within {timeout} s"
    return outcome[0]


def test_a_fifo_is_refused_at_once(ws: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    started = time.monotonic()
    read = in_thread(lambda: ws.read_file("pipe"))
    assert isinstance(read, ToolInputError) and "FIFO" in str(read)
    write = in_thread(lambda: ws.write_file("pipe", "x"))
    assert isinstance(write, ToolInputError) and "FIFO" in str(write)
    assert time.monotonic() - started < 3


def test_a_socket_and_devices_are_refused(ws: Workspace, root: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock"))
    try:
        with pytest.raises(ToolInputError, match="a socket"):
            ws.read_file("sock")
        with pytest.raises(ToolInputError, match="a socket"):
            ws.write_file("sock", "x")
    finally:
        server.close()
    (root / "zero").symlink_to("/dev/zero")
    with pytest.raises(ToolInputError, match="symlink"):
        ws.read_file("zero")
    with pytest.raises(ToolInputError, match="symlink"):
        ws.write_file("zero", "x")
    try:
        os.mknod(root / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        return  # only root may make device nodes; the symlink case above still ran
    with pytest.raises(ToolInputError, match="character device"):
        ws.read_file("null")


def test_symlinks_are_not_followed_even_inside(ws: Workspace, root: Path) -> None:
    (root / "alias").symlink_to(root / "d")
    with pytest.raises(ToolInputError, match="goes through the symlink 'alias'"):
        ws.read_file("alias/f.txt")
    with pytest.raises(ToolInputError, match="goes through the symlink 'alias'"):
        ws.write_file("alias/new.txt", "x")
    assert "alias" in ws.list_files(".")  # listed, not followed
    assert not (root / "d" / "new.txt").exists()


def test_a_hard_link_to_outside_is_replaced_not_written(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    os.link(tmp_path / "outside" / "f.txt", root / "linked.txt")
    ws.write_file("linked.txt", "new")
    assert (tmp_path / "outside" / "f.txt").read_text() == SECRET
    assert (root / "linked.txt").read_text() == "new"


def test_writes_are_atomic_and_keep_the_mode(ws: Workspace, root: Path) -> None:
    (root / "run.sh").write_text("old")
    (root / "run.sh").chmod(0o750)
    ws.write_file("run.sh", "new")
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o750
    ws.write_file("a/b/c.txt", "deep")
    assert stat.S_IMODE((root / "a" / "b" / "c.txt").stat().st_mode) == 0o644
    assert not [p for p in root.rglob("*heron-tmp*")]


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".GIT/config",
        ".Git/hooks/post-checkout",
        "sub/.git/config",
        ".git",
        ".gitmodules",
        ".hg/hgrc",
        ".husky/pre-commit",
        ".githooks/pre-push",
        ".pre-commit-config.yaml",
        ".envrc",
        "deep/er/.envrc",
        ".vscode/tasks.json",
        ".ssh/authorized_keys",
        ".bashrc",
    ],
)
def test_executable_config_is_never_written(ws: Workspace, root: Path, path: str) -> None:
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git" / "config").write_text("[core]\n")
    with pytest.raises(ToolInputError, match="executable configuration"):
        ws.write_file(path, "[core]\n\tfsmonitor = touch /tmp/pwned\n")
    assert (root / ".git" / "config").read_text() == "[core]\n"
    assert ws.read_file(".git/config")["content"] == "[core]\n"  # reading is fine


def test_ordinary_files_near_the_protected_ones_are_written(ws: Workspace) -> None:
    for path in [".gitignore", ".gitattributes", "git/config", "src/.github/ci.yml", "Makefile"]:
        ws.write_file(path, "ok\n")


WRONG_TYPES = [
    ("write_file", {"path": "a.txt", "content": 123}, "'content' must be"),
    ("write_file", {"path": ["a"], "content": "x"}, "'path' must be"),
    ("read_file", {"path": ["a"]}, "'path' must be"),
    ("read_file", {"path": None}, "'path' must be"),
    ("read_file", {"path": "d"}, "a folder"),
    ("read_file", {}, "'path'"),
    ("list_files", {"recursive": "yes"}, "'recursive' must be"),
    ("list_files", {"path": "d/f.txt"}, "not a folder"),
    ("run_command", {"command": 5}, "command is a string"),
    ("run_command", {"command": "ls", "timeout": "soon"}, "'timeout' must be"),
    ("run_command", {"command": "ls", "timeout": -1}, "positive number"),
    ("run_command", {"command": "ls 'unclosed"}, "Cannot split"),
    ("run_command", {"command": ""}, "needs a command"),
]


@pytest.mark.parametrize(("tool", "arguments", "match"), WRONG_TYPES)
def test_wrong_argument_types_are_tool_errors(
    root: Path, tool: str, arguments: dict, match: str
) -> None:
    registry = ToolRegistry()
    register_builtins(registry, root=root, commands=["ls"], policy=load_policy(None))
    with pytest.raises(ToolInputError, match=match):
        registry.call(tool, arguments)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("files")
    (tmp / "ws" / "d").mkdir(parents=True)
    (tmp / "ws" / "d" / "f.txt").write_text("inside")
    env = {"HERON_TOOLS_ROOT": str(tmp / "ws"), "HERON_TOOLS_COMMANDS": '["ls"]'}
    with serve(tmp, env) as server:
        yield server


@pytest.mark.parametrize(("tool", "arguments", "match"), WRONG_TYPES)
def test_wrong_argument_types_over_the_server(
    served: Served, tool: str, arguments: dict, match: str
) -> None:
    reply = served.rpc("tools.call", {"name": tool, "arguments": arguments})
    assert reply["error"]["code"] == -32001, reply
    assert "Traceback" not in reply["error"]["message"]


def test_special_files_over_the_server(served: Served) -> None:
    root = served.home.parent / "ws"
    pipe = root / "pipe"
    if not pipe.exists():
        os.mkfifo(pipe)
    started = time.monotonic()
    reply = served.rpc("tools.call", {"name": "read_file", "arguments": {"path": "pipe"}})
    assert reply["error"]["code"] == -32001 and "FIFO" in reply["error"]["message"]
    reply = served.rpc(
        "tools.call", {"name": "write_file", "arguments": {"path": ".git/config", "content": ""}}
    )
    assert reply["error"]["code"] == -32001 and "executable configuration" in str(reply)
    assert time.monotonic() - started < 10


def test_wrong_argument_types_in_the_cli(root: Path, home: Path) -> None:
    for tool, arguments, _ in (WRONG_TYPES[0], WRONG_TYPES[6]):
        done = run_heron(
            "tools", "call", tool, "--root", str(root), "--args", json.dumps(arguments), ok=False
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert not (root / "a.txt").exists()
