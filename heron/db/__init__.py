"""Heron's database floor: one SQLite connection type, one PostgreSQL database type, one
``Dialect``, and ``open_database``, which picks the backend by ``HERON_DATABASE_URL``.

A store describes its tables once (a ``Schema``, in ``heron.db.dialect``'s notation) and
builds on whichever ``Database`` it is handed (see ``heron.db.base``)::

    with open_database(settings, JOBS) as database:
        ...

``heron.db.postgres`` imports psycopg, so it is imported only where PostgreSQL is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heron.db.base import Database, DatabaseStore, Schema
from heron.db.dialect import POSTGRES, SQLITE, Dialect
from heron.db.sqlite import SQLiteDatabase, SQLiteFile, migrate
from heron.settings import Settings

__all__ = [
    "POSTGRES",
    "SQLITE",
    "Database",
    "DatabaseStore",
    "Dialect",
    "SQLiteDatabase",
    "SQLiteFile",
    "Schema",
    "database_path",
    "migrate",
    "open_database",
]


def database_path(settings: Settings, name: str) -> Path:
    """``{name}.db`` beside the store's ``heron.db``: ``jobs.db``, ``interventions.db``."""
    return settings.db_path.with_name(f"{name}.db")


def open_database(settings: Settings, schema: Schema, **options: Any) -> Database:
    """``schema``'s database: on PostgreSQL when ``HERON_DATABASE_URL`` names one (servers
    then share it), else the SQLite file ``database_path(settings, schema.name)``.
    ``options`` go to ``PostgresDatabase`` (``pool_size``, ``timeout``)."""
    if settings.postgres_url:
        from heron.db.postgres import PostgresDatabase  # psycopg only when it is used

        return PostgresDatabase(settings.postgres_url, schema, **options)
    return SQLiteDatabase(database_path(settings, schema.name), schema)
