"""The contract of a database (``Database``), what a store over one is (``DatabaseStore``),
and how a store describes its tables once for both backends (``Schema``), or once per
backend where they must differ (``EngineSchemas``).

A ``Database`` hands out a connection for one transaction at a time:

- ``SQLiteDatabase`` (``heron.db.sqlite``): one connection to one file, shared by the
  process's threads under a lock; writes in ``BEGIN IMMEDIATE`` transactions, reads in
  autocommit; ``user_version`` migrations; every ``sqlite3`` error translated.
- ``PostgresDatabase`` (``heron.db.postgres``): a pool whose numbered migrations ran on
  open, one transaction per call, reads too; rows as dicts; psycopg's errors as one
  ``StoreError`` naming the database and the advice its owner gives.

Neither retries: a write whose commit went unanswered may have landed, and a second try
would repeat it. Both refuse use once closed, with how to open another; both are context
managers (``with open_database(settings, JOBS) as db:``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from heron.db.dialect import Dialect
from heron.errors import StoreError
from heron.resource import Resource


@dataclass(frozen=True)
class Schema:
    """One store's tables and how its errors name it.

    ``name``: its SQLite file (``{name}.db`` beside ``heron.db``) and its PostgreSQL pool
    (``heron-{name}``); ``what``: "the job store"; ``migrations``: in
    ``heron.db.dialect``'s notation, applied in order, each once (never edit one that has
    shipped: append the next); ``rebuild``: how a SQLite file moved aside comes back;
    ``reopen``: how to open another once this one is closed ("heron.jobs.open_jobs()").
    For a store PostgreSQL may hold: ``noun`` names its migrations table
    (``heron_{noun}_migrations``), ``advice`` ends its errors ("then the job (heron jobs
    show ID) before retrying"). ``primary``: the record store's, the one database
    ``HERON_DATABASE_URL`` names itself; on SQLite its file is ``settings.db_path`` (the
    ``PATH`` of ``sqlite:///PATH``, by default ``heron.db``), which every other schema's
    ``{name}.db`` sits beside.
    """

    name: str
    what: str
    migrations: tuple[str, ...]
    rebuild: str
    reopen: str
    noun: str = ""
    advice: str = ""
    primary: bool = False


class SQLiteOptions(TypedDict, total=False):
    """How ``SQLiteDatabase`` opens a schema's file, past the schema (its keyword
    arguments, whose defaults stand for a key left out): ``timeout``, the seconds a writer
    waits for the lock; ``pragmas`` run on open; ``rows``, the row factory (``None``:
    tuples)."""

    timeout: float
    pragmas: tuple[str, ...]
    rows: Any


class PostgresOptions(TypedDict, total=False):
    """How ``PostgresDatabase`` opens a schema's pool, past the schema (its keyword
    arguments, whose defaults stand for a key left out): ``pool_size``; ``timeout``, the
    seconds a caller waits for a connection; ``rows``, the row factory (``None``: tuples);
    ``vectors``, pgvector's ``vector`` type read and written as float32 arrays; ``setup``,
    statements each new connection runs (``SET hnsw.ef_search = 400``). Plain data, no
    callable of psycopg's, so a schema can be declared where psycopg is not installed."""

    pool_size: int
    timeout: float
    rows: Any
    vectors: bool
    setup: tuple[str, ...]


@dataclass(frozen=True)
class EngineSchemas:
    """A store whose tables differ by backend, declared for each, with how each opens.

    Jobs, interventions and keys write their tables once (a ``Schema`` in
    ``heron.db.dialect``'s notation); the record store cannot: SQLite searches words with
    FTS5 and vectors with usearch beside the file, PostgreSQL with a postings table and
    pgvector. So the store declares both here and still opens through the one function
    that picks the backend (``open_database``), which takes this or a ``Schema`` (the
    same schema, with the default options, on either backend).
    """

    sqlite: Schema
    postgres: Schema
    sqlite_options: SQLiteOptions = field(default_factory=SQLiteOptions)
    postgres_options: PostgresOptions = field(default_factory=PostgresOptions)


class Database(Protocol):
    """What a store needs of a backend: ``SQLiteDatabase`` or ``PostgresDatabase``."""

    #: How this backend's SQL differs (``heron.db.dialect``).
    dialect: Dialect
    #: The database in a sentence: "the job store /srv/jobs.db".
    what: str

    def connection(self, write: bool = False) -> AbstractContextManager[Any]:
        """A connection in one transaction (``write``: one that will write, for which
        SQLite takes its write lock up front)."""
        ...

    def close(self) -> None:
        """Idempotent; no connection may be asked for after it."""
        ...


class DatabaseStore(Resource):
    """A store over a ``Database``, which it owns: ``close()`` closes it."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.dialect = database.dialect
        self._rendered = Rendered(database.dialect)

    def _tx(self, *, write: bool = False) -> AbstractContextManager[Any]:
        return self.database.connection(write)

    @contextmanager
    def statements(self, *, write: bool = False) -> Iterator[Statements]:
        """One transaction whose statements are written in the notation (``Statements``)."""
        with self.database.connection(write) as db:
            yield Statements(db, self._rendered)

    def close(self) -> None:
        self.database.close()


class Rendered(dict[str, str]):
    """Each statement of a store in its database's words (``Dialect.sql``: ``?`` and
    ``{p}``), rendered on first use: a dict lookup a statement after that, so a store
    written once for both backends costs SQLite nothing."""

    def __init__(self, dialect: Dialect) -> None:
        super().__init__()
        self.dialect = dialect

    def __missing__(self, sql: str) -> str:
        self[sql] = self.dialect.sql(sql)
        return self[sql]


@dataclass(slots=True)
class Statements:
    """A connection of ``Database.connection`` that takes a store's SQL in the notation
    (``Rendered``): ``with store.statements() as db: db.execute("... {p}t WHERE a = ?")``."""

    db: Any
    rendered: Rendered

    def execute(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> Any:
        return self.db.execute(self.rendered[sql], args)


def closed_error(what: str, schema: Schema) -> StoreError:
    return StoreError(
        f"{capital(what)} was closed, and a closed database cannot be used again: open a "
        f"new one ({schema.reopen})."
    )


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]
