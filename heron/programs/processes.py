"""Whether a process still runs, for the watchdog's process checks (``heron.ops``) and
the jobs runner's search for dead workers (``heron.jobs``)."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """Running, and not a zombie (killed but not yet reaped by its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): the signal's answer stands
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
