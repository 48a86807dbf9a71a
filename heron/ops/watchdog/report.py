"""The watchdog's record: ``watchdog-latest.json`` (the last run, whole) and
``watchdog-history.jsonl`` (one line per run, with every action taken, append-only).

The history is rotated by size as logrotate would: when the next line would take it past
``max_bytes`` it becomes ``.1`` (``.1`` becomes ``.2`` ...; the oldest beyond ``keep``
goes) and a new file starts; no line is ever split between files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from heron.errors import ConfigError
from heron.ops.jsonfile import read_json
from heron.private import private_dir


def latest_path(home: Path) -> Path:
    return home / "watchdog-latest.json"


def history_path(home: Path) -> Path:
    return home / "watchdog-history.jsonl"


def write_latest(path: Path, report: dict[str, Any]) -> None:
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def append_history(path: Path, entry: dict[str, Any], *, max_bytes: int, keep: int) -> None:
    line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    private_dir(path.parent)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = 0
    if size and size + len(line) > max_bytes:
        rotate(path, keep)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)  # one write of O_APPEND: whole lines, even with two writers
    finally:
        os.close(fd)


def rotate(path: Path, keep: int) -> None:
    """``path`` -> ``path.1`` -> ... -> ``path.KEEP`` (dropped beyond it)."""
    path.with_name(f"{path.name}.{keep}").unlink(missing_ok=True)
    for n in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))


def read_latest(path: Path) -> dict[str, Any]:
    return read_json(
        path,
        missing=ConfigError(
            f"No watchdog report yet ({path} does not exist); run: heron watchdog --once"
        ),
        bad=lambda why: ConfigError(f"Cannot read {path}: {why}; run heron watchdog --once again."),
    )
