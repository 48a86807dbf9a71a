"""Heron's database floor: one SQLite connection type, one PostgreSQL database type, one
``Dialect``, and ``open_database``, which picks the backend by ``HERON_DATABASE_URL``.

A store describes its tables once (a ``Schema``, in ``heron.db.dialect``'s notation), or
once per backend where they must differ (``EngineSchemas``: the record store), and builds
on whichever ``Database`` it is handed (see ``heron.db.base``)::

    with open_database(settings, JOBS) as database:
        ...

``open_database`` is the one place in Heron that picks a backend from the settings.

``heron.db.postgres`` imports psycopg, so it is imported only where PostgreSQL is used.
"""

from __future__ import annotations

from pathlib import Path

from heron.db.base import (
    Database,
    DatabaseStore,
    EngineSchemas,
    PostgresOptions,
    Rendered,
    Schema,
    SQLiteOptions,
    Statements,
)
from heron.db.dialect import POSTGRES, SQLITE, Dialect
from heron.db.sqlite import SQLiteDatabase, SQLiteFile, migrate
from heron.settings import Settings

__all__ = [
    "POSTGRES",
    "SQLITE",
    "Database",
    "DatabaseStore",
    "Dialect",
    "EngineSchemas",
    "PostgresOptions",
    "Rendered",
    "SQLiteDatabase",
    "SQLiteFile",
    "SQLiteOptions",
    "Schema",
    "Statements",
    "database_path",
    "migrate",
    "open_database",
]


def database_path(settings: Settings, schema: Schema) -> Path:
    """The SQLite file of ``schema``: ``settings.db_path`` for the primary one (the record
    store's ``heron.db``), else ``{name}.db`` beside it (``jobs.db``, ``interventions.db``)."""
    if schema.primary:
        return settings.db_path
    return settings.db_path.with_name(f"{schema.name}.db")


def open_database(settings: Settings, schema: Schema | EngineSchemas) -> Database:
    """``schema``'s database: on PostgreSQL when ``HERON_DATABASE_URL`` names one (servers
    then share it), else the SQLite file ``database_path(settings, schema)``; for an
    ``EngineSchemas``, that backend's schema, opened with its options.

    To open a given backend rather than the configured one (``heron store parity`` opens
    a SQLite store and a PostgreSQL one side by side), hand it settings that name it:
    ``settings.model_copy(update={"database_url": "sqlite:///PATH"})``, or a
    ``postgresql://`` URL.
    """
    engines = schema if isinstance(schema, EngineSchemas) else EngineSchemas(schema, schema)
    if settings.postgres_url:
        from heron.db.postgres import PostgresDatabase  # psycopg only when it is used

        return PostgresDatabase(settings.postgres_url, engines.postgres, **engines.postgres_options)
    return SQLiteDatabase(
        database_path(settings, engines.sqlite), engines.sqlite, **engines.sqlite_options
    )
