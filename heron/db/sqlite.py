"""SQLite for every file Heron keeps: errors translated once, ``user_version`` migrations,
and ``SQLiteDatabase``, the one connection type.

Heron keeps its state in SQLite files under ``$HERON_HOME``: the store (``heron.db``), the
embedding cache (``embeddings.db``), the job and intervention stores (``jobs.db``,
``interventions.db``), the sessions and the usage logs (``skills.db``, ``tools.db``).
``sqlite3`` reports a damaged, read-only or locked file as a ``DatabaseError`` that names
neither the file nor the fix; the user meets it instead as one ``StoreError`` (see
``heron.errors``) that names both::

    The store /home/ada/.local/share/heron/heron.db is corrupt (database disk image is
    malformed). Stop what uses it (heron serve), then restore it from a backup, or move
    it aside with its -wal and -shm files if there are any (mv .../heron.db
    .../heron.db.bad); then rebuild it: heron index && heron skills index ...

Each owner describes its file once (``SQLiteFile``): ``file.connect()`` opens it,
``file.errors()`` translates every use, ``file.transaction()`` writes under the same
translation and ``file.quick_check()`` reads every page, to find damage no query has met
yet; ``file.copy_to()`` snapshots it and ``file.read_only()`` reads a copy (a backup's).
``migrate`` brings a file's schema up to date by ``PRAGMA user_version``.
``SQLiteDatabase`` is the three together behind one lock, for a file a process shares
between its threads, with a second connection (``reader()``) for reads that must not wait
behind the first. No module outside ``heron.db`` calls ``sqlite3.connect``: every
connection Heron makes to a SQLite file is opened here, its working files' by ``connect``
(WAL, the file private), a backup's as ``copy_to`` and ``read_only`` say.
"""

from __future__ import annotations

import shlex
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.db.base import Schema, closed_error
from heron.db.dialect import SQLITE
from heron.errors import DatabaseBusy, DatabaseCorrupt, DatabaseReadOnly, StoreError
from heron.private import private_dir, private_file
from heron.resource import Resource


@dataclass(frozen=True)
class SQLiteFile:
    """A SQLite file Heron keeps, as its errors name it.

    ``what`` names it in a sentence ("the store"); ``rebuild`` says how what it held comes
    back once it is moved aside, as a command (``heron index``) or a sentence.
    """

    path: Path
    what: str
    rebuild: str

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Raise any ``sqlite3`` error of the block as ``translate`` describes it."""
        try:
            yield
        except (sqlite3.InterfaceError, sqlite3.ProgrammingError):
            raise  # Heron misused the driver: a bug to report, not a fault of the file
        except sqlite3.DatabaseError as exc:
            raise self.translate(exc) from exc

    @contextmanager
    def transaction(self, db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """One write transaction on ``db`` (an autocommit connection of this file).

        ``BEGIN IMMEDIATE`` takes the write lock up front, so two writers queue (up to the
        connection's timeout) instead of one failing half-way with "database is locked".
        """
        with self.errors():
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                # A failed ROLLBACK (a damaged file) must not hide the error behind it.
                with suppress(sqlite3.Error):
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                raise

    def connect(
        self,
        *,
        timeout: float,
        schema: str = "",
        pragmas: Iterable[str] = (),
        isolation_level: str | None = None,
    ) -> sqlite3.Connection:
        """The file opened for any thread (its folder created), in WAL mode, then each of
        ``pragmas`` and the idempotent ``schema`` run. Raises ``StoreError``."""
        try:
            private_dir(self.path.parent)
        except OSError as exc:
            raise StoreError(
                f"Cannot create the folder of {self.what} {self.path} ({exc}). Create it, or "
                "let the user running Heron write there."
            ) from exc
        with suppress(OSError):  # a folder Heron may not write: SQLite's error says so below
            private_file(self.path)
        db = None
        try:
            with self.errors():
                db = sqlite3.connect(
                    self.path,
                    timeout=timeout,
                    isolation_level=isolation_level,
                    check_same_thread=False,
                )
                db.execute("PRAGMA journal_mode=WAL")
                for pragma in pragmas:
                    db.execute(f"PRAGMA {pragma}")
                if schema:
                    db.executescript(schema)  # executescript commits on its own
        except BaseException:
            if db is not None:
                db.close()
            raise
        return db

    def quick_check(self, db: sqlite3.Connection) -> None:
        """Read every page and refuse a damaged file with ``DatabaseCorrupt``.

        ``PRAGMA quick_check`` skips only the index-content checks of ``integrity_check``
        but reads the whole file: on a 100 MB store, 0.8 s from disk and 0.1 s once the
        file is in the page cache. Too slow for every open; cheap for a status or an index.
        """
        with self.errors():
            rows = db.execute("PRAGMA quick_check(1)").fetchall()
        problem = rows[0][0] if rows else "no answer"
        if problem != "ok":
            raise self._corrupt(problem.replace("\n", " "))

    @contextmanager
    def read_only(self) -> Iterator[sqlite3.Connection]:
        """The file opened read-only (``mode=ro``): nothing is written to it, its journal
        mode is left as it is; for checking a file Heron does not run on (a backup's).
        Raises ``StoreError``."""
        uri = f"{self.path.absolute().as_uri()}?mode=ro"
        with self.errors(), closing(sqlite3.connect(uri, uri=True)) as db:
            yield db

    def copy_to(self, dest: Path, *, timeout: float = 60) -> None:
        """One consistent snapshot of the file into ``dest``, through SQLite's online
        backup API: whole even while another process writes, and holding what the
        write-ahead log held. ``dest`` is made private first and left a plain file
        (journal mode ``DELETE``: no log to replay). Raises ``StoreError``."""
        # SQLite would make ``dest`` with the umask's mode; its journal takes the mode of
        # the file it finds.
        private_file(dest)
        # Read-write, though it only reads: a read-only connection to a WAL file that no
        # one has open cannot make the -shm file it needs. Its journal mode is left as is.
        with (
            self.errors(),
            closing(sqlite3.connect(self.path, timeout=timeout)) as source,
            closing(sqlite3.connect(dest)) as target,
        ):
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")

    def translate(self, exc: sqlite3.DatabaseError) -> StoreError:
        """One ``StoreError`` naming the file, the problem and the fix, by SQLite's code."""
        code = getattr(exc, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        detail = str(exc)
        where = f"{self.what} {self.path}"
        if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return self._corrupt(detail)
        if primary == sqlite3.SQLITE_READONLY:
            if code == sqlite3.SQLITE_READONLY_DIRECTORY:
                blocked = f"its folder {self.path.parent} is not writable"
            else:
                blocked = "Heron may not write it"
            return DatabaseReadOnly(
                f"{_capital(where)} is read-only ({detail}): {blocked}. Let the user running "
                f"Heron write the file and its folder (ls -ld {_quote(self.path)} "
                f"{_quote(self.path.parent)}), or point Heron at a folder it may write."
            )
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return DatabaseBusy(
                f"{_capital(where)} is locked by another process ({detail}). Wait for it to "
                "finish (a heron index or another writer) and try again."
            )
        if primary == sqlite3.SQLITE_CANTOPEN:
            return StoreError(
                f"Cannot open {where} ({detail}). Check that {self.path.parent} exists and "
                "that the user running Heron may read and create files in it."
            )
        if primary == sqlite3.SQLITE_FULL:
            return StoreError(
                f"The disk holding {where} is full ({detail}). Free some space and try again."
            )
        if primary == sqlite3.SQLITE_IOERR:
            return StoreError(
                f"Reading or writing {where} failed ({detail}). Check the disk, and that "
                "nothing removed or replaced the file while Heron had it open."
            )
        return StoreError(f"{_capital(where)} failed: {detail}.")

    def _corrupt(self, detail: str) -> DatabaseCorrupt:
        # The -wal and -shm files go too: left behind, a stale log would be replayed into
        # the next file of that name. Whether they exist is only known once Heron exits.
        aside = self.path.with_name(self.path.name + ".bad")
        return DatabaseCorrupt(
            f"{_capital(self.what)} {self.path} is corrupt ({detail}). Stop what uses it "
            "(heron serve), then restore it from a backup, or move it aside with its -wal "
            f"and -shm files if there are any (mv {_quote(self.path)} {_quote(aside)}); "
            f"then {self.rebuild}."
        )


def _quote(path: Path) -> str:
    return shlex.quote(str(path))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def migrate(db: sqlite3.Connection, file: SQLiteFile, migrations: Sequence[str]) -> int:
    """Apply the migrations the file lacks, each in its own write transaction with its
    version number (SQLite's DDL is transactional: one interrupted leaves nothing), and
    return the version (``PRAGMA user_version``). A file newer than this Heron is
    refused, untouched. A file that is up to date is only read: opening takes no write
    lock. Never edit a migration that has shipped: append the next."""
    with file.errors():
        found = _user_version(db)
    for version, sql in enumerate(migrations, 1):
        if found >= version:
            continue
        with file.transaction(db):
            # Read under the write lock: a second process opening the file waits, then
            # finds the migration applied.
            if _user_version(db) >= version:
                continue
            for statement in sql.split(";"):  # no triggers: no ';' inside a statement
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {version}")
        with file.errors():
            found = _user_version(db)
    if found > len(migrations):
        raise StoreError(
            f"{file.path} has {file.what}'s schema version {found}, newer than this Heron "
            f"knows ({len(migrations)}): a newer Heron wrote it. Upgrade Heron on this "
            "machine (pip install -U heron), or restore a backup made by this version."
        )
    return found


def _user_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


class SQLiteDatabase(Resource):
    """One connection to ``path``, shared by the process's threads under a lock, with
    ``schema``'s migrations applied (in SQLite's words, ``SQLITE``) and ``sqlite3``'s
    errors translated. Writes run in ``BEGIN IMMEDIATE`` transactions (the whole file is
    the lock, so a change that reads before it writes needs no row lock); reads in
    autocommit. Rows are ``sqlite3.Row`` (read by column name) unless ``rows`` says
    otherwise (``None``: tuples).

    >>> with SQLiteDatabase(Path("jobs.db"), JOBS) as db:           # doctest: +SKIP
    ...     with db.connection(write=True) as conn:
    ...         conn.execute("DELETE FROM jobs")
    """

    dialect = SQLITE

    def __init__(
        self,
        path: Path,
        schema: Schema,
        *,
        timeout: float = 30,
        pragmas: Iterable[str] = ("synchronous=NORMAL", "foreign_keys=ON"),
        rows: Any = sqlite3.Row,
    ) -> None:
        self.path = Path(path)
        self.schema = schema
        #: Seconds a writer waits for the file's lock (a second connection to the file
        #: waits as long).
        self.timeout = timeout
        self.what = f"{schema.what} {self.path}"
        self.file = SQLiteFile(self.path, schema.what, schema.rebuild)
        self._closed = False
        self._lock = threading.RLock()
        self._pragmas = tuple(pragmas)
        self._rows = rows
        self._db = self.file.connect(timeout=timeout, pragmas=self._pragmas)
        try:
            migrations = [SQLITE.schema(sql) for sql in schema.migrations]
            self.schema_version = migrate(self._db, self.file, migrations)
        except BaseException:
            self._db.close()
            raise
        self._db.row_factory = rows
        # The second connection (``reader``), opened on first use, under its own lock.
        self._reader: sqlite3.Connection | None = None
        self._reader_lock = threading.Lock()

    @contextmanager
    def connection(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection, this thread's alone until the block ends; in a write
        transaction when ``write``."""
        with self._lock:
            if self._closed:  # closed by another thread while this one waited
                raise closed_error(self.what, self.schema)
            if write:
                with self.file.transaction(self._db) as db:
                    yield db
            else:
                with self.file.errors():
                    yield self._db

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A second connection, for reads that must not wait behind ``connection()``'s
        (WAL lets the two read at once: the store's hybrid search runs its word query
        here while the vector side uses the first). Opened on first use as the first one
        was (``SQLiteFile.connect``: WAL, the file private, the same pragmas and rows),
        this thread's alone until the block ends, closed with the database."""
        with self._reader_lock:
            if self._closed:
                raise closed_error(self.what, self.schema)
            if self._reader is None:
                self._reader = self.file.connect(timeout=self.timeout, pragmas=self._pragmas)
                self._reader.row_factory = self._rows
            with self.file.errors():
                yield self._reader

    def close(self) -> None:
        """Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()
        with self._reader_lock:  # after _closed: no reader opens once it is set
            if self._reader is not None:
                self._reader.close()
                self._reader = None
