"""Heron's own files are the user's alone: folders 0700, files 0600, from the moment they
exist (``$HERON_HOME`` holds indexed documents, chat sessions, job logs and tokens in
``heron.toml``; another local user must not read them).

>>> private_file(Path("~/.local/share/heron/heron.db").expanduser())  # doctest: +SKIP
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path


def private_dir(path: Path) -> Path:
    """``path`` and every missing folder above it created 0700 (``Path.mkdir(parents=True)``
    would make the parents with the umask's 0755). Folders that exist are left as they are:
    their owner chose their mode."""
    missing = []
    folder = path
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty with mode 0600 if it does not exist (its folder must). For
    SQLite: it would make a new file 0644 and gives the ``-wal`` and ``-shm`` files the
    mode of the database, so a database begun here keeps all three private. An existing
    file is left alone, read-only or not, for its opener to judge."""
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    return path
