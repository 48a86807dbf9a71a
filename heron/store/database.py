"""One transaction per call on SQLite or PostgreSQL: the driver half of Heron's SQL stores.

The job store (``heron.jobs``) and the intervention store (``heron.interventions``) each
write their algorithm once in SQL over a connection that these two classes hand out:

- ``SQLiteDatabase``: one connection to one file, shared by the process's threads under a
  lock; writes in ``BEGIN IMMEDIATE`` transactions (the whole file is the lock, so a
  change that reads before it writes needs no row lock), reads in autocommit; every
  ``sqlite3`` error translated by ``heron.sqlite_errors.SQLiteFile``.
- ``PostgresDatabase``: a pool whose migrations ran on open (``heron.store.pg_schema``),
  one transaction per call, reads too; rows as dicts; psycopg's errors as one
  ``StoreError`` naming the database and the advice its owner gives.

Neither retries: a write whose commit went unanswered may have landed, and a second try
would repeat it. ``DatabaseStore`` is what a store over either does alike: it refuses
use once closed, and closes its database once.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from heron.errors import StoreError
from heron.sqlite_errors import SQLiteFile


class SQLiteDatabase:
    """``file`` opened with ``schema``; ``closed()`` is the error once it was closed."""

    def __init__(
        self,
        file: SQLiteFile,
        *,
        schema: str,
        closed: Callable[[], StoreError],
        timeout: float = 30,
        pragmas: Iterable[str] = ("synchronous=NORMAL", "foreign_keys=ON"),
    ) -> None:
        self.file = file
        self._closed_error = closed
        self._closed = False
        self._lock = threading.RLock()
        self._db = file.connect(timeout=timeout, schema=schema, pragmas=pragmas)
        self._db.row_factory = sqlite3.Row

    @contextmanager
    def connection(self, write: bool) -> Iterator[sqlite3.Connection]:
        """The connection, this thread's alone until the block ends; in a write
        transaction when ``write``."""
        with self._lock:
            if self._closed:  # closed by another thread while this one waited
                raise self._closed_error()
            if write:
                with self.file.transaction(self._db) as db:
                    yield db
            else:
                with self.file.errors():
                    yield self._db

    def close(self) -> None:
        """Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()


class PostgresDatabase:
    """A pool on ``url`` for the ``noun`` store ("job": the pool ``heron-jobs``), with
    ``migrations`` applied and recorded in ``heron_{noun}_migrations``.

    ``what`` names it in errors ("the job store at db:5432/heron"); ``advice`` ends them
    ("then the job (heron jobs show ID) before retrying"). Raises ``StoreError`` when the
    server cannot be reached or a migration cannot be applied.
    """

    def __init__(
        self,
        url: str,
        noun: str,
        migrations: Sequence[str],
        *,
        advice: str,
        pool_size: int = 4,
        timeout: float = 30,
    ) -> None:
        import psycopg  # only where PostgreSQL is used
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool, PoolTimeout

        from heron.store.pg_schema import open_pool, where

        self.where = where(url)
        self.what = f"the {noun} store at {self.where}"
        self._advice = advice
        self._errors: tuple[type[Exception], ...] = (PoolTimeout, psycopg.Error)
        try:
            self._pool = open_pool(
                url,
                name=f"heron-{noun}s",
                size=pool_size,
                timeout=timeout,
                migrations=migrations,
                table=f"heron_{noun}_migrations",
                kwargs={"row_factory": dict_row},
                check=ConnectionPool.check_connection,
            )
        except psycopg.Error as exc:
            raise self.error(exc) from exc

    def error(self, exc: Exception) -> StoreError:
        return StoreError(
            f"{_capital(self.what)} failed: "
            f"{str(exc).strip()}. Check that PostgreSQL runs and HERON_DATABASE_URL, "
            f"{self._advice}."
        )

    @contextmanager
    def connection(self, write: bool) -> Iterator[Any]:
        """A pooled connection in one transaction (reads too, so a read sees one
        snapshot); ``write`` makes no difference here."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except self._errors as exc:
            raise self.error(exc) from exc

    def close(self) -> None:
        self._pool.close()


class Database(Protocol):
    """What a store needs of a driver: ``SQLiteDatabase`` or ``PostgresDatabase``."""

    def connection(self, write: bool) -> AbstractContextManager[Any]: ...

    def close(self) -> None: ...


class DatabaseStore:
    """A store over a ``Database``: ``what`` names it in errors ("the job store
    /srv/jobs.db"), ``reopen`` is how to open another once it was closed
    ("heron.jobs.open_jobs()")."""

    def __init__(self, database: Database, what: str, *, reopen: str) -> None:
        self._database = database
        self._what = what
        self._reopen = reopen
        self._closed = False

    def closed_error(self) -> StoreError:
        return StoreError(
            f"{_capital(self._what)} was closed, and a closed store cannot be used again: "
            f"open a new one ({self._reopen})."
        )

    @contextmanager
    def _tx(self, *, write: bool = False) -> Iterator[Any]:
        """One transaction (``write``: one that will write, which SQLite takes its write
        lock for up front)."""
        if self._closed:
            raise self.closed_error()
        with self._database.connection(write) as db:
            yield db

    def close(self) -> None:
        """Idempotent."""
        if not self._closed:
            self._closed = True
            self._database.close()


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
