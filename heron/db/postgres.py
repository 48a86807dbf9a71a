"""PostgreSQL for Heron: numbered migrations applied on start, a pool, and
``PostgresDatabase``, the one database type over them; pgvector's ``vector`` as float32
arrays (``Vector`` on the way in) for a database opened with ``vectors=True``.

Each migration runs in its own transaction (PostgreSQL's DDL is transactional), so one
that is interrupted leaves nothing behind and runs again whole next time. A transaction
advisory lock serialises servers that start at the same moment: the second waits, then
finds the migration applied and skips it. Imported only where PostgreSQL is used: it
imports psycopg.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from heron.errors import HeronError, InputError, StoreError
from heron.extras import missing

try:
    import psycopg
    from psycopg.adapt import Dumper, Loader
    from psycopg.rows import dict_row
    from psycopg.types import TypeInfo
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # the postgres extra: a clear error wherever this is imported
    raise StoreError(missing("postgres")) from exc

from heron.db.base import Schema, capital, closed_error
from heron.db.dialect import POSTGRES
from heron.resource import Resource

T = TypeVar("T")
#: ``pg_advisory_xact_lock`` key of the migrations (any fixed 64-bit number).
LOCK = 0x4E524F4E_0001


def schema_version(conn: psycopg.Connection, table: str) -> int:
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection, migrations: Sequence[str], table: str) -> int:
    """Apply the migrations ``conn``'s database lacks; returns the schema version.

    ``table`` records the applied ones (each component has its own list and table:
    ``heron_migrations`` for the store, ``heron_job_migrations`` ...). ``conn`` must be in
    autocommit mode: each migration opens its own transaction.
    """
    for version, sql in enumerate(migrations, 1):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} ("
                "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            if schema_version(conn, table) >= version:
                continue
            try:
                conn.execute(sql)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StoreError(
                    f"Cannot apply migration {version} of {table}: {exc}. Ask the database owner "
                    "to run CREATE EXTENSION vector in this database, or connect as its owner."
                ) from exc
            conn.execute(f"INSERT INTO {table} (version) VALUES (%s)", (version,))
    version = schema_version(conn, table)
    if version > len(migrations):
        raise StoreError(
            f"The database's {table} schema is version {version}, newer than this Heron knows "
            f"({len(migrations)}). Upgrade Heron on this machine."
        )
    return version


def where(url: str) -> str:
    """``host:port/db`` of a URL, without the user and password, for messages.

    >>> where("postgresql://heron:secret@db.local/heron")
    'db.local:5432/heron'
    """
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"


class Vector:
    """A float32 vector on its way to a pgvector ``vector`` parameter."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.asarray(array, dtype=np.float32).reshape(-1)


class _VectorDumper(Dumper):
    """pgvector's binary format: dimension and a zero (uint16 each), big-endian float32s."""

    format = psycopg.pq.Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        head = np.array([obj.array.size, 0], dtype=">u2").tobytes()
        return head + obj.array.astype(">f4").tobytes()


class _VectorLoader(Loader):
    format = psycopg.pq.Format.BINARY

    def load(self, data: Any) -> np.ndarray:
        return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)


def register_vectors(conn: psycopg.Connection) -> None:
    """``Vector`` parameters sent, and ``vector`` columns read back, in pgvector's binary
    format on ``conn``: the type's oid is the database's own, so each connection asks."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:  # migrations create it before the pool opens
        raise StoreError("pgvector's vector type is missing; restart Heron to migrate.")
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(Vector, dumper)
    conn.adapters.register_loader(info.oid, _VectorLoader)


def open_pool(
    url: str,
    *,
    name: str,
    size: int,
    timeout: float,
    migrations: Sequence[str],
    table: str,
    **options: Any,
) -> ConnectionPool:
    """A pool of up to ``size`` autocommit connections to ``url``, opened once
    ``migrations`` are applied on a connection of their own (what every PostgreSQL
    component of Heron does on start: the store, the job store). ``timeout`` bounds the
    wait for a connection; ``options`` go to ``ConnectionPool`` (``configure``,
    ``check``, and ``kwargs`` added to ``autocommit``). Raises ``psycopg.Error`` when the
    server cannot be reached, ``StoreError`` when a migration cannot be applied.
    """
    with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout))) as conn:
        migrate(conn, migrations, table)
    kwargs = {"autocommit": True, **options.pop("kwargs", {})}
    return ConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs=kwargs,
        timeout=timeout,
        name=name,
        open=True,
        **options,
    )


class PostgresDatabase(Resource):
    """A pool on ``url`` for ``schema``'s store (``JOBS``: the pool ``heron-jobs``), with
    its migrations (in PostgreSQL's words, ``POSTGRES``) applied and recorded in
    ``heron_{noun}_migrations`` (``heron_migrations`` without a noun). Each
    ``connection()`` is one transaction, reads too, so a read sees one snapshot; ``run()``
    is the store's way, retried when the connection drops. Rows are dicts unless ``rows``
    is ``None`` (tuples). Each new connection reads and writes pgvector's ``vector`` as
    float32 arrays when ``vectors`` (``register_vectors``), then runs the statements of
    ``setup``. These are the keys of ``PostgresOptions``, as data, so that a schema
    declares them without importing psycopg. Raises ``StoreError`` when the server cannot
    be reached or a migration cannot be applied; its messages end with the schema's
    ``advice``.

    >>> with PostgresDatabase("postgresql://heron@db/heron", JOBS) as db:  # doctest: +SKIP
    ...     with db.connection() as conn:
    ...         conn.execute("SELECT count(*) FROM heron_jobs").fetchone()
    """

    dialect = POSTGRES

    def __init__(
        self,
        url: str,
        schema: Schema,
        *,
        pool_size: int = 4,
        timeout: float = 30,
        rows: Any = dict_row,
        vectors: bool = False,
        setup: Sequence[str] = (),
    ) -> None:
        self.schema = schema
        self.url = url
        self.where = where(url)
        self.what = f"{schema.what} at {self.where}"
        self._closed = False
        self._errors: tuple[type[Exception], ...] = (PoolTimeout, psycopg.Error)
        # After a server restart every pooled connection is dead: one more attempt than
        # the pool holds reaches a fresh one.
        self._attempts = pool_size + 1
        table = f"heron_{schema.noun}_migrations" if schema.noun else "heron_migrations"
        options: dict[str, Any] = {"check": ConnectionPool.check_connection}
        if rows is not None:
            options["kwargs"] = {"row_factory": rows}
        if vectors or setup:
            options["configure"] = lambda conn: _configure(conn, vectors, setup)
        try:
            self._pool = open_pool(
                url,
                name=f"heron-{schema.name}",
                size=pool_size,
                timeout=timeout,
                migrations=[POSTGRES.schema(sql) for sql in schema.migrations],
                table=table,
                **options,
            )
        except psycopg.Error as exc:
            raise self.error(exc) from exc

    def error(self, exc: Exception) -> StoreError:
        return StoreError(
            f"{capital(self.what)} failed: "
            f"{str(exc).strip()}. Check that PostgreSQL runs (scripts/postgres start in a "
            f"checkout) and HERON_DATABASE_URL, "
            f"{self.schema.advice}."
        )

    @contextmanager
    def connection(self, write: bool = False) -> Iterator[Any]:
        """A pooled connection in one transaction; ``write`` makes no difference here."""
        if self._closed:
            raise closed_error(self.what, self.schema)
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except self._errors as exc:
            raise self.error(exc) from exc

    def run(self, work: Callable[[psycopg.Connection], T], *, write: bool = False) -> T:
        """``work`` on a pooled connection, in one transaction if it ``write``s; again on
        a fresh connection when the connection drops. Only for idempotent work (upserts
        by key, deletes by key, key-value sets): a dropped transaction rolled back whole,
        but a commit whose answer was lost may have landed, and it runs again. Reads run
        without BEGIN/COMMIT, two round trips fewer, so a read of several statements does
        not see one snapshot. Heron's own errors pass through; refused data is an
        ``InputError``."""
        if self._closed:
            raise closed_error(self.what, self.schema)
        for attempt in range(1, self._attempts + 1):
            try:
                with self._pool.connection() as conn:
                    if not write:
                        return work(conn)
                    with conn.transaction():
                        return work(conn)
            except HeronError:
                raise
            except psycopg.OperationalError as exc:
                if attempt == self._attempts:
                    raise self.error(exc) from exc
                time.sleep(0.05 * attempt)
            except psycopg.DataError as exc:
                raise InputError(f"PostgreSQL refused the data: {exc}") from exc
            except self._errors as exc:
                raise self.error(exc) from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Idempotent."""
        if not self._closed:
            self._closed = True
            self._pool.close()


def _configure(conn: psycopg.Connection, vectors: bool, setup: Sequence[str]) -> None:
    """A new connection of the pool, made ready as ``PostgresDatabase`` was asked."""
    if vectors:
        register_vectors(conn)
    for statement in setup:
        conn.execute(statement)
