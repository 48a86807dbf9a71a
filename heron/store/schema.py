"""The record store's tables, one schema per backend, and ``STORE``, which
``heron.store.open_store`` hands to ``heron.db.open_database``.

Jobs and interventions write their tables once for both backends; the store cannot, so
each backend has its own here (``heron.db.EngineSchemas`` says why). They live apart
from the two backends' code because ``heron.store.postgres`` imports psycopg, and
``open_store`` must reach both schemas where psycopg is not installed: what opens the
PostgreSQL pool is data (``heron.db.PostgresOptions``), not a callable of psycopg's.
"""

from __future__ import annotations

from heron.db import EngineSchemas, PostgresOptions, Schema, SQLiteOptions

#: How a store moved aside comes back (the end of a ``DatabaseCorrupt`` message).
REBUILD = (
    "rebuild it: heron index && heron skills index (and heron store load again for the "
    "namespaces you loaded yourself)"
)

#: The SQLite store's schema as ordered migrations (``heron.db.sqlite.migrate``); ``PRAGMA
#: user_version`` is how many are applied. Never edit one that has shipped: append the
#: next. The first creates its tables only where missing, so a file made before versions
#: existed (version 0) takes it as is.
SQLITE_MIGRATIONS: tuple[str, ...] = (
    """
CREATE TABLE IF NOT EXISTS namespaces (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    model_id TEXT NOT NULL,
    dim INTEGER NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS records (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    seq INTEGER NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX IF NOT EXISTS records_seq ON records (namespace_id, seq);
CREATE TABLE IF NOT EXISTS tombstones (
    namespace_id INTEGER NOT NULL,
    key INTEGER NOT NULL,
    seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tombstones_seq ON tombstones (namespace_id, seq);
CREATE TABLE IF NOT EXISTS kv (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
""",
    # 2: each record's analysis language (heron.store.analysis); the records before were
    # all analysed as English. Indexed so a search reads a namespace's languages from it.
    """
ALTER TABLE records ADD COLUMN language TEXT NOT NULL DEFAULT 'en';
CREATE INDEX records_language ON records (namespace_id, language);
""",
)

#: The PostgreSQL store's schema as numbered migrations, applied on start and recorded in
#: ``heron_migrations`` (``heron.db.postgres.migrate``). Never edit one that has shipped:
#: append the next.
POSTGRES_MIGRATIONS: tuple[str, ...] = (
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
    # 2: as SQLite's 2, each record's analysis language.
    """
    ALTER TABLE heron_records ADD COLUMN language text NOT NULL DEFAULT 'en';
    CREATE INDEX heron_records_language ON heron_records (namespace_id, language);
    """,
)


def languages_sql(records: str, mark: str) -> str:
    """The query of the languages a namespace's records are analysed in, sorted, given
    the namespace's id twice (``mark``: the driver's placeholder): each next language is
    the least above the last, one step down the ``(namespace_id, language)`` index, so a
    search reads a few index entries, not one per record. Both backends run it."""
    return (
        "WITH RECURSIVE found (language) AS ("
        f"SELECT min(language) FROM {records} WHERE namespace_id = {mark} UNION ALL "
        f"SELECT (SELECT min(language) FROM {records} WHERE namespace_id = {mark} "
        "AND language > found.language) FROM found WHERE found.language IS NOT NULL) "
        "SELECT language FROM found WHERE language IS NOT NULL"
    )


#: HNSW candidate list size: 400 reaches recall@10 0.95 at 1M vectors (200: 0.92, 18 against
#: 15 ms p50); pgvector's default (40) would also cap a search at 40 results.
EF_SEARCH = 400

#: The store on either backend: on SQLite the file ``HERON_DATABASE_URL`` names
#: (``heron.db`` by default), read as tuples, its writers waiting up to a minute for the
#: lock (an index run holds it for a batch at a time); on PostgreSQL the pool
#: ``heron-store``, its migrations in ``heron_migrations``, rows as tuples, vectors as
#: float32 arrays, and each connection searching HNSW graphs ``EF_SEARCH`` wide, going on
#: with filters until enough rows pass them.
STORE = EngineSchemas(
    sqlite=Schema(
        name="heron",
        what="the store",
        migrations=SQLITE_MIGRATIONS,
        rebuild=REBUILD,
        reopen="heron.store.open_store(settings)",
        primary=True,
    ),
    postgres=Schema(
        name="store",
        what="the PostgreSQL store",
        migrations=POSTGRES_MIGRATIONS,
        rebuild="",
        reopen="heron.store.open_store(settings)",
        advice="then run the operation again (it wrote nothing; an upsert keeps its earlier "
        "batches)",
    ),
    sqlite_options=SQLiteOptions(timeout=60, rows=None),
    postgres_options=PostgresOptions(
        rows=None,
        vectors=True,
        setup=(f"SET hnsw.ef_search = {EF_SEARCH}", "SET hnsw.iterative_scan = strict_order"),
    ),
)
