"""The PostgreSQL store's schema, as numbered migrations applied on start (``open_pool``).

Each migration runs in its own transaction (PostgreSQL's DDL is transactional), so one
that is interrupted leaves nothing behind and runs again whole next time. A transaction
advisory lock serialises servers that start at the same moment: the second waits, then
finds the migration applied and skips it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg_pool import ConnectionPool

from heron.errors import StoreError

#: ``pg_advisory_xact_lock`` key of the migrations (any fixed 64-bit number).
LOCK = 0x4E524F4E_0001

MIGRATIONS: tuple[str, ...] = (
    # 1: records with their vector and number of analysed terms; the postings of their
    # terms (occurrences in title and body, the record's length again so that scoring
    # needs no join); key-value state.
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE heron_namespaces (
        id serial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        model_id text NOT NULL,
        dim integer NOT NULL,
        docs bigint NOT NULL DEFAULT 0,
        tokens bigint NOT NULL DEFAULT 0
    );
    CREATE TABLE heron_records (
        key bigserial PRIMARY KEY,
        namespace_id integer NOT NULL REFERENCES heron_namespaces (id) ON DELETE CASCADE,
        id text NOT NULL,
        text text NOT NULL,
        metadata jsonb NOT NULL,
        hash text NOT NULL,
        embedding vector NOT NULL,
        length integer NOT NULL,
        UNIQUE (namespace_id, id)
    );
    -- Vectors inline with their row: out-of-line (TOAST) storage made an exact scan of
    -- 5,000 vectors 4 times slower (43 against 10 ms).
    ALTER TABLE heron_records ALTER COLUMN embedding SET STORAGE MAIN;
    CREATE TABLE heron_postings (
        namespace_id integer NOT NULL,
        term text NOT NULL,
        key bigint NOT NULL REFERENCES heron_records (key) ON DELETE CASCADE,
        in_title integer NOT NULL,
        in_body integer NOT NULL,
        length integer NOT NULL,
        PRIMARY KEY (namespace_id, term, key)
    );
    CREATE INDEX heron_postings_key ON heron_postings (key);
    CREATE TABLE heron_kv (
        namespace text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (namespace, key)
    );
    """,
)


def schema_version(conn: psycopg.Connection, table: str = "heron_migrations") -> int:
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def migrate(
    conn: psycopg.Connection,
    migrations: Sequence[str] = MIGRATIONS,
    table: str = "heron_migrations",
) -> int:
    """Apply the migrations ``conn``'s database lacks; returns the schema version.

    ``table`` records the applied ones (each component, the store or the jobs, has its
    own list and table). ``conn`` must be in autocommit mode: each migration opens its own
    transaction.
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
                    f"Cannot apply store migration {version}: {exc}. Ask the database owner "
                    "to run CREATE EXTENSION vector in this database, or connect as its owner."
                ) from exc
            conn.execute(f"INSERT INTO {table} (version) VALUES (%s)", (version,))
    version = schema_version(conn, table)
    if version > len(migrations):
        raise StoreError(
            f"The database's store schema is version {version}, newer than this Heron knows "
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


def open_pool(
    url: str,
    *,
    name: str,
    size: int,
    timeout: float,
    migrations: Sequence[str] = MIGRATIONS,
    table: str = "heron_migrations",
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
