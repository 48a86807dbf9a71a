"""``python_exec``: a short Python snippet run in a bubblewrap sandbox.

The snippet runs under ``bwrap`` (Debian's ``bubblewrap``) with:

- no network: its own empty network namespace (``--unshare-net``; even loopback is its
  own), and its own user, PID, IPC, UTS and cgroup namespaces; no capabilities, no
  further user namespaces;
- a read-only view of the system programs only (``/usr`` and the ``/bin``, ``/lib``...
  beside it): no ``/home``, ``/root``, ``/etc``, ``/tmp`` or Heron's data; the root
  and ``/dev`` read-only too;
- fresh, empty, size-capped ``tmpfs`` mounts as its working directory, ``/tmp`` and
  ``/dev/shm``, the only places it can write: ``FILES_BYTES`` (64 MiB) in all, gone
  when it ends;
- an environment of ``PATH``, ``HOME``, ``LANG`` alone: none of Heron's variables (API
  keys, tokens) reach it, and the interpreter runs isolated (``-I``);
- limits (util-linux's ``prlimit`` before ``bwrap`` starts, inherited by the snippet):
  address space (``tools_python_memory_mb``), CPU seconds, processes, open files, file
  size; a wall clock (``tools_python_timeout``) after which the whole sandbox is killed;
  stdout and stderr kept up to ``tools_python_max_output`` bytes each (the rest is read
  and dropped, so a flood cannot fill memory);
- one memory limit for all its processes and files together, the address space's and
  ``FILES_BYTES`` (``heron.tools.cgroups``: a memory cgroup, where Heron may make one:
  as root, or in a delegated cgroup). The address space bounds each process, not their
  sum: without a cgroup, a snippet that forks may hold the limit once per process (at
  most ``MAX_PROCESSES``), and the server's log says so once, with why.

Run by root, the sandbox drops to ``nobody`` first: the process limit then counts the
sandbox's own processes, and a way out of the namespaces would find no privilege.
The interpreter is ``/usr/bin/python3`` (the system's, with its standard library and none
of Heron's packages).

Safety ``execute``; offered only when ``tools_python_exec`` is on, and never to a ``/v1``
client's request (the ``local-only`` tag, ``heron.agent``).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from heron.core.errors import ToolCallError, ToolInputError
from heron.core.tools import Handler, Tool, argument, object_schema
from heron.settings import Settings, ToolsSettings
from heron.tools.cgroups import MemoryCgroup

log = logging.getLogger(__name__)

#: Tools with this tag are offered to Heron's own surfaces only, never to a /v1 request.
LOCAL_ONLY = "local-only"
INTERPRETER = Path("/usr/bin/python3")
#: The snippet's source, at most (a snippet, not a program).
MAX_CODE_BYTES = 100_000
WORKDIR = "/sandbox"
#: Sizes of the sandbox's tmpfs mounts, bytes: its working directory, ``/tmp`` and
#: ``/dev/shm`` (multiprocessing's semaphores and shared memory). They are RAM, and the
#: only places it can write: ``FILES_BYTES`` is all the files it can hold.
WORKDIR_BYTES = 48 << 20
TMP_BYTES = 12 << 20
SHM_BYTES = 4 << 20
FILES_BYTES = WORKDIR_BYTES + TMP_BYTES + SHM_BYTES
MAX_PROCESSES = 32
MAX_FILES = 64
NOBODY = 65534
#: The system directories bound read-only (a symlink, as in merged-/usr Debian, is kept
#: a symlink).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True)
class Limits:
    timeout: float
    memory_mb: int
    max_output: int

    @classmethod
    def of(cls, tools: ToolsSettings) -> Limits:
        return cls(tools.python_timeout, tools.python_memory_mb, tools.python_max_output)


def bwrap() -> str:
    """The ``bwrap`` program; ``ToolCallError`` saying how to install it when missing."""
    found = shutil.which("bwrap")
    if found is None:
        raise ToolCallError(
            "python_exec needs bubblewrap (bwrap) for its sandbox: sudo apt-get install "
            "bubblewrap (scripts/setup installs it), or turn HERON_TOOLS_PYTHON_EXEC off."
        )
    return found


def sandbox_command(program: str, code: str, interpreter: Path = INTERPRETER) -> list[str]:
    """The ``bwrap`` command line that runs ``code`` (see the module doc)."""
    command = [
        program,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            command += ["--ro-bind", path, path]
    command += ["--proc", "/proc", "--dev", "/dev"]
    for size, path in ((WORKDIR_BYTES, WORKDIR), (TMP_BYTES, "/tmp"), (SHM_BYTES, "/dev/shm")):
        command += ["--size", str(size), "--tmpfs", path]
    # bwrap's root and /dev are tmpfs of half the RAM, writable: read-only once the
    # mounts above are on them (the remount is not recursive; they stay writable).
    command += ["--remount-ro", "/dev", "--remount-ro", "/"]
    command += ["--chdir", WORKDIR, "--clearenv"]
    for name, value in (("PATH", "/usr/bin:/bin"), ("HOME", WORKDIR), ("LANG", "C.UTF-8")):
        command += ["--setenv", name, value]
    return [*command, str(interpreter), "-I", "-c", code]


def limited(command: list[str], limits: Limits) -> list[str]:
    """``command`` under util-linux's ``prlimit``: the limits are set in the child by a
    program, not by Python code between fork and exec (``preexec_fn``, unsafe in the
    agent's threads)."""
    program = shutil.which("prlimit")
    if program is None:
        raise ToolCallError(
            "python_exec needs prlimit (util-linux) for its limits: sudo apt-get install "
            "util-linux, or turn HERON_TOOLS_PYTHON_EXEC off."
        )
    memory = limits.memory_mb << 20
    cpu = int(limits.timeout) + 1
    return [
        program,
        f"--as={memory}",
        f"--cpu={cpu}",
        f"--nproc={MAX_PROCESSES}",
        f"--nofile={MAX_FILES}",
        f"--fsize={WORKDIR_BYTES}",
        "--core=0",
        "--",
        *command,
    ]


class _Capped:
    """Reads a pipe to its end, keeping the first ``limit`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.kept = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._read, args=(pipe, limit), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes], limit: int) -> None:
        with pipe:
            while chunk := pipe.read(65536):
                self.total += len(chunk)
                room = limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]

    def text(self, wait: float) -> str:
        self._thread.join(wait)
        return self.kept.decode("utf-8", "replace")


def run_python(code: str, limits: Limits, *, interpreter: Path = INTERPRETER) -> dict[str, Any]:
    """Run ``code`` in the sandbox: its stdout, stderr, exit status and how it ended
    (``stopped``: ``None``, or why Heron stopped it)."""
    _check_code(code)
    command = limited(sandbox_command(bwrap(), code, interpreter), limits)
    cgroup = _cgroup(limits)
    if cgroup is not None:
        # The sandbox starts once it is in the cgroup: a shell waits for a line, then
        # becomes prlimit (so nothing runs outside the cgroup before the limit holds).
        command = ["/bin/sh", "-c", 'read -r _ && exec "$@" </dev/null', "sh", *command]
    started = time.monotonic()
    process = _start(command, waits=cgroup is not None)
    assert process.stdout is not None and process.stderr is not None
    out = _Capped(process.stdout, limits.max_output)
    err = _Capped(process.stderr, limits.max_output)
    status, stopped, oom_kills = _wait(process, cgroup, limits)
    seconds = time.monotonic() - started
    stdout, stderr = out.text(2.0), err.text(2.0)
    if stopped is None and cgroup is not None and oom_kills:
        stopped = (
            f"memory: its processes and files went over {cgroup.limit >> 20} MiB together; "
            f"the kernel killed {oom_kills} of them"
        )
    elif stopped is None and status < 0:
        name = signal.Signals(-status).name
        why = {"SIGXCPU": "the CPU limit", "SIGKILL": "a limit", "SIGSEGV": "a crash"}
        stopped = f"killed by {name} ({why.get(name, 'a signal')})"
    elif stopped is None and "MemoryError" in stderr[-2000:]:
        stopped = f"memory: over the {limits.memory_mb} MiB limit"
    truncated = out.total > limits.max_output or err.total > limits.max_output
    return {
        "exit_code": status,
        "stdout": stdout,
        "stderr": stderr,
        "stopped": stopped,
        "truncated": truncated,
        "stdout_bytes": out.total,
        "stderr_bytes": err.total,
        "seconds": round(seconds, 3),
    }


def _check_code(code: object) -> None:
    """``ToolInputError`` unless ``code`` is a snippet the sandbox takes: some text, at
    most ``MAX_CODE_BYTES``, no NUL."""
    if not isinstance(code, str) or not code.strip():
        raise ToolInputError("python_exec: give the Python code to run in 'code'.")
    if len(code.encode("utf-8", "replace")) > MAX_CODE_BYTES:
        raise ToolInputError(
            f"python_exec: the code is over {MAX_CODE_BYTES} bytes; run a shorter snippet."
        )
    if "\x00" in code:
        raise ToolInputError("python_exec: the code holds a NUL character.")


def _start(command: list[str], *, waits: bool) -> subprocess.Popen[bytes]:
    """Start the sandbox ``command`` in its own session, with no environment; ``waits``:
    its stdin a pipe, for the line that lets it go once it is in its cgroup."""
    root = os.getuid() == 0
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE if waits else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={},
        # Root drops to nobody first (see the module doc).
        user=NOBODY if root else None,
        group=NOBODY if root else None,
        extra_groups=[] if root else None,
        start_new_session=True,  # one group: a timeout kills bwrap and all it started
        close_fds=True,
    )


def _wait(
    process: subprocess.Popen[bytes], cgroup: MemoryCgroup | None, limits: Limits
) -> tuple[int, str | None, int]:
    """Let ``process`` go (in ``cgroup``) and wait for its end, killed at the timeout:
    its status, ``stopped`` if the timeout did, and the kills of the cgroup's memory
    limit. The cgroup is closed after."""
    stopped = None
    oom_kills = 0
    try:
        if cgroup is not None:
            assert process.stdin is not None
            try:
                cgroup.add(process.pid)
            except OSError as exc:  # it runs with its per-process limits, as without one
                log.warning("python_exec: cannot move the sandbox into %s: %s", cgroup.path, exc)
            try:
                process.stdin.write(b"go\n")
                process.stdin.close()
            except BrokenPipeError:
                pass  # it ended already; its status says how
        try:
            status = process.wait(limits.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            status = process.wait()
            stopped = f"timeout: still running after {limits.timeout:g} s, killed"
        if cgroup is not None:
            oom_kills = cgroup.oom_kills()
    finally:
        if cgroup is not None:
            cgroup.close()
    return status, stopped, oom_kills


_warned: set[str] = set()


def _cgroup(limits: Limits) -> MemoryCgroup | None:
    """A memory cgroup for one run: the address space and the files together; ``None``
    (said once in the log, with why) where none can be made."""
    made = MemoryCgroup.make((limits.memory_mb << 20) + FILES_BYTES)
    if isinstance(made, MemoryCgroup):
        return made
    if made not in _warned:
        _warned.add(made)
        log.warning(
            "python_exec: %s; each of a snippet's processes is held to %d MiB, not all of "
            "them together. Run Heron as root or in a delegated cgroup for one limit.",
            made,
            limits.memory_mb,
        )
    return None


def python_tool(settings: Settings) -> tuple[Tool, Handler]:
    limits = Limits.of(settings.tools)
    return (
        Tool(
            "python_exec",
            "Run a short Python 3 snippet in a sandbox (no network, no files but its own "
            "scratch directory, standard library only) and return its stdout, stderr and "
            f"exit code. Print what you want to see. At most {limits.timeout:g} s and "
            f"{limits.memory_mb} MiB.",
            object_schema(["code"], code=("string", "the Python source to run")),
            safety="execute",
            tags=("python", "code", LOCAL_ONLY),
        ),
        lambda a: run_python(argument(a, "code"), limits),
    )
