"""Run the real ``heron`` command in a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys


def run_heron(
    *args: str, ok: bool = True, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``python -m heron ARGS``; with ``ok``, fail the test unless it exits 0."""
    done = subprocess.run(
        [sys.executable, "-m", "heron", *args], capture_output=True, text=True, timeout=timeout
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done
