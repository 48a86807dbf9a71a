"""Heartbeats (push checks): a job that must report in calls
``POST /watchdog/heartbeat/NAME`` on Heron's server; the ``heartbeat`` check named NAME
fails when no call came within its ``period``.

Each beat is the time it came, in ``$HERON_HOME/watchdog-heartbeats/NAME``, replaced
atomically: one small file per configured heartbeat check (the server takes beats only
for names the watchdog config declares), read by the watchdog's next run.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from heron.private import private_dir

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def beats_dir(home: Path) -> Path:
    return home / "watchdog-heartbeats"


def _path(home: Path, name: str) -> Path:
    if not _NAME.fullmatch(name) or name.startswith("."):
        raise ValueError(f"{name!r} is not a check name")
    return beats_dir(home) / name


def record_beat(home: Path, name: str, when: float) -> None:
    """Record a beat of check ``name`` at ``when`` (seconds since the epoch)."""
    path = _path(home, name)
    private_dir(path.parent)
    tmp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(repr(when), encoding="utf-8")
    os.replace(tmp, path)


def last_beat(home: Path, name: str) -> float | None:
    """When check ``name`` last beat, or None before its first beat."""
    try:
        return float(_path(home, name).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
