"""Where the library lists are kept: files on one machine, the database for replicas.

A library list is text, one library a line (``heron.libraries.config`` reads and writes
it, whatever keeps it). On one machine it is a file (``libraries.txt``, or a context's
``libraries_file``), edited under file locks. When ``HERON_DATABASE_URL`` is PostgreSQL,
several replicas with homes of their own serve one set of libraries (their records are in
that database), so their lists are rows of ``heron_library_lists`` there, one per list:

- a list is known by its ``key``: ``libraries.txt`` for the home's list, whatever the
  home's path on each replica, and a context's ``libraries_file`` by its path as
  heron.toml gives it (the same file name on every replica, which need not exist);
- until the database holds a list, a replica's own file stands for it: the first change
  (``library add``, ``library remove``) writes the list there, from where every replica
  reads it at each use (a query of one row), and the file is no longer read;
- every change takes one transaction advisory lock (``LOCK``), held while it reads the
  lists and until its write commits: two replicas adding one name at once cannot both
  find it free, as two processes on one machine cannot under the file locks.

Each replica keeps its own clone of a git library (``$HERON_HOME/libraries/NAME``): the
first index on a replica that lacks one clones it (``heron.libraries.sync``); searches
need none, the records being in the database.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from heron.db import Database, Schema, open_database
from heron.private import private_dir
from heron.settings import Settings

#: The lists' table, on PostgreSQL only (on SQLite the lists are files).
LISTS = Schema(
    name="library_lists",
    noun="library_list",
    what="the library catalogue",
    migrations=(
        """
CREATE TABLE {new}{p}library_lists (
    key text PRIMARY KEY,
    body text NOT NULL,
    updated_at {real} NOT NULL
);
""",
    ),
    rebuild="",
    reopen="heron.libraries.catalogue.database()",
    advice="then run heron library list",
)
#: ``pg_advisory_xact_lock`` key of every change of a list (a fixed 64-bit number).
LOCK = 0x4E524F4E_0047
#: ``write(lines)``: the list being changed, replaced by ``lines``.
Write = Callable[[list[str]], None]

_databases: dict[str, Database] = {}
_opening = threading.Lock()
#: ``db``: the connection of the change this thread is making (``editing``), which its
#: reads use: waiting for the lock, a change holds one of the pool's connections, and
#: reads on others could exhaust the pool.
_editing = threading.local()


def database(settings: Settings) -> Database:
    """The process's one connection pool to the catalogue of ``HERON_DATABASE_URL`` (a
    PostgreSQL URL), opened on first use and kept: lists are read at every use."""
    url = settings.postgres_url
    assert url is not None, "the catalogue is in the database only on PostgreSQL"
    with _opening:
        if url not in _databases:
            _databases[url] = open_database(settings, LISTS)
        return _databases[url]


def read(path: Path, key: str, settings: Settings) -> str | None:
    """The text of the list ``key`` (its file ``path`` on this machine); ``None`` when
    there is none."""
    if settings.postgres_url:
        query = "SELECT body FROM heron_library_lists WHERE key = %s"
        held = getattr(_editing, "db", None)
        if held is not None:
            row = held.execute(query, (key,)).fetchone()
        else:
            with database(settings).connection() as db:
                row = db.execute(query, (key,)).fetchone()
        if row is not None:
            return str(row["body"])
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


@contextmanager
def editing(
    path: Path, key: str, settings: Settings, *, names: Path | None = None
) -> Iterator[Write]:
    """Change the list ``key`` (file ``path``): while the block runs no other change of
    any list runs, on this machine (file locks: ``names``, the lock every name check
    takes, then the list's) or on any replica (the database's advisory lock); the block
    reads the lists (``read``) and calls the ``Write`` it is given at most once, which
    lands when the block ends without an error."""
    if settings.postgres_url:
        with database(settings).connection(write=True) as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))

            def write(lines: list[str]) -> None:
                db.execute(
                    "INSERT INTO heron_library_lists (key, body, updated_at) "
                    "VALUES (%s, %s, %s) ON CONFLICT (key) DO UPDATE "
                    "SET body = excluded.body, updated_at = excluded.updated_at",
                    (key, _text(lines), time.time()),
                )

            _editing.db = db
            try:
                yield write
            finally:
                _editing.db = None
        return
    with _locked(names) if names is not None else nullcontext(), _locked(path):
        yield lambda lines: _write(path, lines)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise edits of a list file between processes."""
    private_dir(path.parent)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _write(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(_text(lines), encoding="utf-8")
    os.replace(tmp, path)  # readers see the old file or the new one, never half of one
