"""A memory cgroup for one sandboxed run: the pages of all its processes and of the files
in its tmpfs mounts, counted together against one limit.

``prlimit --as`` bounds each process's address space, not their sum: a snippet that
forks holds its limit once per child (six children of a 96 MiB snippet held 514 MiB), and
the pages of a file in a tmpfs are in no process's address space at all. A memory cgroup
counts both, and the kernel stops the sandbox's processes when they pass it together.

The cgroup is made as a child of the one this process is in, so every limit above it
still holds: on cgroup v2 (``memory.max``, ``memory.swap.max``) or the memory controller
of cgroup v1 (``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes``). That needs
write access there: root has it, and so has a user whose systemd delegates a cgroup v2
subtree to them (``Delegate=yes``). Elsewhere ``MemoryCgroup.make`` says why not, and
the caller runs with its other limits.

>>> with MemoryCgroup.make(256 << 20) as cgroup:  # doctest: +SKIP
...     cgroup.add(process.pid)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

#: Seconds ``close`` waits for the cgroup's processes to be gone before removing it.
EMPTY_WAIT = 2.0


class MemoryCgroup:
    """One cgroup, ``path``, whose processes share ``limit`` bytes of memory (no swap).
    Use it as a context manager: leaving it kills what is still inside and removes it."""

    def __init__(self, path: Path, version: int, limit: int) -> None:
        self.path = path
        self.version = version
        self.limit = limit

    @classmethod
    def make(cls, limit: int) -> MemoryCgroup | str:
        """A new cgroup limited to ``limit`` bytes, or why none can be made here."""
        found = _own_memory_cgroup()
        if isinstance(found, str):
            return found
        parent, version = found
        path = parent / f"heron-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            path.mkdir()
        except OSError as exc:
            return f"cannot make a cgroup under {parent} ({exc.strerror})"
        cgroup = cls(path, version, limit)
        try:
            cgroup._limit()
        except OSError as exc:
            cgroup.close()
            return f"cannot limit the memory of a cgroup under {parent} ({exc.strerror})"
        return cgroup

    def _limit(self) -> None:
        if self.version == 2:
            if not (self.path / "memory.max").exists():
                # The parent does not hand its memory controller down (subtree_control).
                raise OSError(0, "its memory controller is not enabled for child cgroups")
            _write(self.path / "memory.max", self.limit)
            if (self.path / "memory.swap.max").exists():
                _write(self.path / "memory.swap.max", 0)
            return
        _write(self.path / "memory.limit_in_bytes", self.limit)
        if (self.path / "memory.memsw.limit_in_bytes").exists():  # memory and swap together
            _write(self.path / "memory.memsw.limit_in_bytes", self.limit)

    def add(self, pid: int) -> None:
        """Move process ``pid`` in; the children it starts afterwards are in it too."""
        _write(self.path / "cgroup.procs", pid)

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for passing the limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            lines = (self.path / name).read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def close(self) -> None:
        """Kill whatever is still in it, then remove it."""
        deadline = time.monotonic() + EMPTY_WAIT
        while True:
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.path.rmdir()
                return
            if time.monotonic() > deadline:
                return  # an empty cgroup left behind costs nothing; the kernel frees it
            time.sleep(0.02)

    def __enter__(self) -> MemoryCgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write(path: Path, value: int) -> None:
    with open(path, "w", encoding="ascii") as file:
        file.write(str(value))


def _own_memory_cgroup() -> tuple[Path, int] | str:
    """The folder of the cgroup this process is in that holds its memory controller (v1's
    memory hierarchy where it is mounted, else the v2 one), and its version."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as exc:
        return f"cannot read this process's cgroups ({exc.strerror})"
    paths: dict[str, str] = {}
    for line in memberships:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    for version, controller in ((1, "memory"), (2, "")):
        if controller not in paths:
            continue
        for mount in mounts:
            # mountinfo: id parent dev root mountpoint options [optional...] - type source super
            fields, _, tail = mount.partition(" - ")
            kind, *rest = tail.split(" ")
            if kind != ("cgroup" if version == 1 else "cgroup2"):
                continue
            if version == 1 and "memory" not in rest[-1].split(","):
                continue
            root, mountpoint = fields.split(" ")[3:5]
            inside = os.path.relpath(paths[controller], root)
            if inside.startswith(".."):
                continue  # this mount shows another part of the hierarchy
            return Path(mountpoint) / inside, version
    return "no memory cgroup is mounted where this process can see it"
