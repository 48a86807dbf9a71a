"""A local program's output as it is written: text on its standard input, never on its
command line (so no text becomes an option), the minimal program environment
(``program_environment``), killed at a timeout. What speaks for the interventions'
voice (``heron.interventions.voice``) and the broker's local speech model
(``heron.llm.speech``) alike: espeak-ng.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence

from heron.errors import HeronError
from heron.programs.env import program_environment
from heron.redact import redact

CHUNK = 64 * 1024


class ProgramFailed(HeronError):
    """The program is not installed, failed, or ran past its timeout; says which."""


def output_of(
    program: str,
    args: Sequence[str],
    stdin: bytes,
    *,
    timeout: float,
    missing: str = "",
    doing: str = "run",
) -> Iterator[bytes]:
    """``program args`` given ``stdin``: its standard output in chunks as it writes them
    (never held whole), then ``ProgramFailed`` if it exited with an error or ran past
    ``timeout`` seconds (``doing``: what it was doing, for that message). ``missing``:
    what to do when it is not installed. Closing the iterator early kills the program."""
    found = shutil.which(program)
    if found is None:
        raise ProgramFailed(f"The program {program!r} is not installed{missing}.")
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(
                [found, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=program_environment(),
            )
        except OSError as exc:
            raise ProgramFailed(f"{program} could not be run: {exc.strerror}.") from exc
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            process.kill()

        timer = threading.Timer(timeout, stop)
        timer.start()
        assert process.stdin is not None and process.stdout is not None
        try:
            try:
                process.stdin.write(stdin)
                process.stdin.close()
            except BrokenPipeError:  # it stopped before reading: its exit says why
                pass
            while chunk := process.stdout.read(CHUNK):
                yield chunk
            code = process.wait()
        finally:
            timer.cancel()
            process.kill()  # a reader that stopped early: nothing more is wanted
            process.wait()
            process.stdout.close()
        if timed_out.is_set():
            raise ProgramFailed(f"{program} took over {timeout:g} s to {doing}.")
        if code != 0:
            errors.seek(0)
            error = redact(errors.read(4096).decode("utf-8", "replace").strip()[:300])
            raise ProgramFailed(f"{program} failed (exit {code}): {error}")
