"""python_exec's sandbox against snippets that try to get out: a socket, a write outside
its directory, a loop that never ends, an allocation without bound, a fork bomb, a flood
of output and a look at the environment. Each is stopped and reported, through the tool
as the agent calls it, and the machine is left as it was (no file, no process)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heron.core.errors import ToolInputError
from heron.settings import Settings
from heron.tools import ToolRegistry
from heron.tools.pyexec import python_tool
from tests.ci import missing

Run = Callable[[str], dict[str, Any]]


@pytest.fixture
def run(home: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    if shutil.which("bwrap") is None:
        missing("bwrap is missing", "install it: scripts/setup (apt-get install bubblewrap)")
    monkeypatch.setenv("HERON_TEST_SECRET", "sk-must-not-leak")
    settings = Settings(
        tools={
            "python_exec": True,
            "python_timeout": 2.0,
            "python_memory_mb": 96,
            "python_max_output": 4096,
        },
    )
    registry = ToolRegistry()
    registry.add(*python_tool(settings))
    return lambda code: registry.call("python_exec", {"code": code})


def _processes(marker: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if marker in line and "ps -eo" not in line]


def test_a_snippet_runs_and_its_output_and_status_come_back(run: Run) -> None:
    result = run("import sys\nprint(6 * 7)\nprint('oops', file=sys.stderr)\nsys.exit(3)")
    assert (result["stdout"], result["stderr"], result["exit_code"]) == ("42\n", "oops\n", 3)
    assert result["stopped"] is None and not result["truncated"]


def test_no_network_not_even_loopback(run: Run) -> None:
    result = run(
        "import socket\n"
        "for where in [('1.1.1.1', 53), ('127.0.0.1', 22)]:\n"
        "    try:\n"
        "        socket.create_connection(where, timeout=1)\n"
        "        print('connected', where)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
    )
    assert "connected" not in result["stdout"]
    assert result["stdout"].count("refused") == 2


def test_writes_outside_its_directory_fail_or_stay_inside(run: Run, home: Path) -> None:
    escape = Path("/tmp") / f"heron-escape-{uuid.uuid4().hex}"
    home.mkdir(parents=True, exist_ok=True)
    result = run(
        "import os\n"
        f"for path in ['/usr/heron-escape', {str(home / 'escape')!r}, {str(escape)!r}]:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('failed', exc.strerror)\n"
        "open('mine.txt', 'w').write('ok')\n"
        "print(os.getcwd(), sorted(os.listdir('.')))\n"
    )
    lines = result["stdout"].splitlines()
    assert lines[0] == "failed Read-only file system"  # the system is read-only
    assert lines[1] == "failed No such file or directory"  # Heron's home is not there at all
    assert lines[2] == f"wrote {escape}"  # its own /tmp, a tmpfs gone with it...
    assert lines[3] == "/sandbox ['mine.txt']"
    assert not escape.exists() and not (home / "escape").exists()  # ...not the machine's
    assert not Path("/usr/heron-escape").exists()


def test_a_loop_that_never_ends_is_killed_at_the_timeout(run: Run) -> None:
    marker = f"spin_{uuid.uuid4().hex}"
    result = run(f"{marker} = 0\nwhile True:\n    {marker} += 1\n")
    assert result["stopped"].startswith("timeout") and result["exit_code"] < 0
    assert 1.9 < result["seconds"] < 6
    assert _processes(marker) == []


def test_an_allocation_without_bound_stops_at_the_memory_limit(run: Run) -> None:
    result = run("chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n")
    assert result["stopped"] == "memory: over the 96 MiB limit"
    assert "MemoryError" in result["stderr"] and result["exit_code"] == 1


def test_a_fork_bomb_meets_the_process_limit(run: Run) -> None:
    marker = f"bomb_{uuid.uuid4().hex}"
    result = run(
        f"import os, time\n{marker} = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        f"        {marker} += 1\n"
        "except OSError as exc:\n"
        f"    print('stopped after', {marker}, exc.strerror)\n"
    )
    forks = int(result["stdout"].split()[2])
    assert forks < 40 and "Resource temporarily unavailable" in result["stdout"]
    assert _processes(marker) == []  # its sleeping children died with the sandbox


def test_a_flood_of_output_is_cut_and_nothing_secret_is_in_the_environment(run: Run) -> None:
    result = run("import os\nprint(sorted(os.environ))\nprint('y' * 10_000_000)")
    assert result["stdout"].startswith("['HOME', 'LANG', 'PATH', 'PWD']\n")
    assert len(result["stdout"]) == 4096 and result["truncated"]
    assert result["stdout_bytes"] > 10_000_000  # read to the end, kept in part


@pytest.mark.parametrize("code", ["", "   ", 42, "\x00"])
def test_bad_code_is_refused_clearly(run: Run, code: Any) -> None:
    with pytest.raises(ToolInputError, match="python_exec"):
        run(code)


# -- issue 45: the files and the memory of the whole sandbox -------------------------------

#: Writes 32 MiB at a time into new files under each folder until one fails; prints what
#: each took and why it stopped.
FILL = """
import os
for folder in ["/", "/dev", "/dev/shm", "/tmp", "/sandbox"]:
    written, why = 0, "room left"
    for n in range(8):
        try:
            with open(os.path.join(folder, f"fill-{n}"), "wb") as out:
                for _ in range(4):
                    out.write(b"x" * (8 << 20))
                    written += 8
        except OSError as exc:
            why = exc.strerror
            break
    print(folder, written, why)
"""


def test_the_root_and_dev_are_read_only_and_all_its_files_fit_one_cap(run: Run) -> None:
    """The attack run wrote 128 MiB past a 64 MiB cap: ``/`` and ``/dev/shm`` were tmpfs
    of 12 GB (half the RAM) each, capped only per file. Now the root and ``/dev`` are
    read-only and every folder it may write is a tmpfs of its size: 64 MiB in all."""
    result = run(FILL)
    took = {line.split()[0]: line.split(maxsplit=2)[1:] for line in result["stdout"].splitlines()}
    assert took["/"] == ["0", "Read-only file system"], result
    assert took["/dev"] == ["0", "Read-only file system"]
    for folder in ("/dev/shm", "/tmp", "/sandbox"):
        assert took[folder][1] in ("No space left on device", "File too large"), took
    assert sum(int(took[f][0]) for f in took) <= 64, took


#: Forks children that each hold 40 MiB (written, so the pages are real), waits until
#: each has it (or died trying), then counts how many hold it at once.
FORKS = """
import os, time
children = []
for _ in range(8):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        block = bytearray(40 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        os.write(w, b"h")
        time.sleep(3)
        os._exit(0)
    os.close(w)
    children.append((pid, r))
for pid, r in children:
    os.read(r, 1)  # its byte, or nothing when it was killed
time.sleep(0.3)
print("held", sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid, _ in children))
"""


def test_all_its_processes_share_one_memory_limit(run: Run) -> None:
    """``prlimit --as`` bounds each process: eight children of a 96 MiB snippet held
    320 MiB together. A memory cgroup holds the sandbox's processes and files to the
    limit and the files' 64 MiB together (``heron.tools.cgroups``)."""
    from heron.tools.cgroups import MemoryCgroup

    made = MemoryCgroup.make(1 << 30)
    if isinstance(made, str):
        missing(f"no memory cgroup can be made here: {made}", "run the tests as root")
    made.close()
    result = run(FORKS)
    held = int(result["stdout"].split()[1]) if result["stdout"] else 0
    assert held * 40 <= 96 + 64, result
    assert result["stopped"] and result["stopped"].startswith("memory:"), result
