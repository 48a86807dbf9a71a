"""Running the programs checks and remedies name: an argv list, never a shell.

Every program gets the minimal environment of ``heron.programs.env`` (git hardened, API
keys left behind) plus the variables its entry lists; Heron's own commands (``heron
doctor``, ``heron index``) get the ``HERON_*`` ones too. Output goes to temporary files,
not pipes: a remedy that starts a server in the background would keep a pipe open, and
waiting for its end would wait for the server. On timeout the whole process group is
killed, so a build's children do not outlive it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from heron.programs import WORKSPACE_PROTOCOLS, program_environment
from heron.redact import redact

#: How much of a program's output a record keeps (its end, where errors are).
TAIL = 2000


@dataclass(frozen=True)
class Ran:
    """What one program did; ``returncode`` is None when it could not start or timed out."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self) -> str:
        """The last lines it wrote (stderr, else stdout), on one line, secrets masked."""
        lines = (self.stderr.strip() or self.stdout.strip()).splitlines()[-3:]
        return redact(" | ".join(lines))[-TAIL:]

    def summary(self) -> str:
        """One line for a report: the error, else the exit status and the output's end."""
        if self.error:
            return self.error
        tail = self.tail()
        return f"exit status {self.returncode}" + (f": {tail}" if tail else "")


def heron_argv(*args: str) -> list[str]:
    """This Heron's own command line, whatever the PATH holds."""
    return [sys.executable, "-m", "heron", *args]


def environment(names: Iterable[str] = (), *, heron: bool = False) -> dict[str, str]:
    """The minimal environment plus ``names`` (globs allowed) found in Heron's own;
    ``file`` is among git's transports: a deploy remote is the operator's choice."""
    wanted = [*names, *(["HERON_*"] if heron else [])]
    extra = [n for n in os.environ if any(fnmatch.fnmatchcase(n, w) for w in wanted)]
    return program_environment(extra=extra, protocols=(*WORKSPACE_PROTOCOLS, "file"))


def run_program(
    argv: Sequence[str],
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Ran:
    """Run ``argv`` to its end or ``timeout``; never raises for the program's failure."""
    argv = list(argv)
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=environment() if env is None else env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group, killed whole on timeout
            )
        except OSError as exc:
            return Ran(argv, None, "", "", 0.0, f"cannot run {argv[0]}: {exc.strerror or exc}")
        error = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            error = f"{os.path.basename(argv[0])} ran past its {timeout:g} s timeout; killed"
        seconds = time.monotonic() - started
        stdout, stderr = _read(out), _read(err)
    code = None if error else proc.returncode
    return Ran(argv, code, stdout, stderr, seconds, error)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", "replace")


def systemd_available() -> str | None:
    """Why systemd cannot be asked here, or None when it can."""
    if shutil.which("systemctl") is None:
        return "systemd not available: systemctl is not installed"
    if not Path("/run/systemd/system").is_dir():
        return "systemd not available: it is not running on this machine (PID 1 is not systemd)"
    return None
