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
would repeat it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

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
    """A pool on ``url`` with ``migrations`` applied (recorded in ``table``).

    ``what`` names the component in errors ("the job store"); ``advice`` ends them
    ("then the job (heron jobs show ID) before retrying"). Raises ``StoreError`` when the
    server cannot be reached or a migration cannot be applied.
    """

    def __init__(
        self,
        url: str,
        *,
        what: str,
        advice: str,
        name: str,
        migrations: Sequence[str],
        table: str,
        pool_size: int = 4,
        timeout: float = 30,
    ) -> None:
        import psycopg  # only where PostgreSQL is used
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool, PoolTimeout

        from heron.store.pg_schema import open_pool, where

        self.where = where(url)
        self._what = what
        self._advice = advice
        self._errors: tuple[type[Exception], ...] = (PoolTimeout, psycopg.Error)
        try:
            self._pool = open_pool(
                url,
                name=name,
                size=pool_size,
                timeout=timeout,
                migrations=migrations,
                table=table,
                kwargs={"row_factory": dict_row},
                check=ConnectionPool.check_connection,
            )
        except psycopg.Error as exc:
            raise self.error(exc) from exc

    def error(self, exc: Exception) -> StoreError:
        return StoreError(
            f"{self._what[:1].upper()}{self._what[1:]} at {self.where} failed: "
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
