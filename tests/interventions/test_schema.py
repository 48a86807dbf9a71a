"""The intervention tables, written once (``heron.interventions.sql.INTERVENTIONS``), are the same
on SQLite and on PostgreSQL, and PostgreSQL's migration 1 stays what databases applied."""

from __future__ import annotations

import hashlib
import re
import sqlite3

from heron.db import POSTGRES
from heron.interventions.sql import FIELDS, INTERVENTIONS
from tests.interventions.conftest import open_store
from tests.jobs.conftest import Backend

TABLES = ("interventions", "intervention_deliveries", "intervention_rooms", "intervention_active")


def test_the_first_postgresql_migration_is_frozen() -> None:
    # Databases recorded migration 1 as applied by number: a change to it would reach
    # new databases only. A new column is a second migration, not an edit of the first.
    text = re.sub(r"\s+", " ", POSTGRES.schema(INTERVENTIONS.migrations[0])).strip()
    assert hashlib.sha256(text.encode()).hexdigest() == (
        "2ae2cd1aa4be516b6215fc22ced23024b11acbb46cc6821526344f57b4902763"
    )


def columns(database: Backend) -> dict[str, list[str]]:
    """Each table's columns, in order, as the database made them."""
    if database.kind == "sqlite":
        with sqlite3.connect(database.location) as db:
            return {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    import psycopg

    query = (
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "ORDER BY ordinal_position"
    )
    with psycopg.connect(database.location) as conn:
        return {t: [r[0] for r in conn.execute(query, (f"heron_{t}",))] for t in TABLES}


def test_both_backends_make_the_same_tables(backend: Backend) -> None:
    open_store(backend).close()
    found = columns(backend)
    assert found["interventions"] == list(FIELDS)
    assert found["intervention_deliveries"][:2] == ["id", "intervention_id"]
    assert found["intervention_rooms"] == ["room", "last_id", "last_delivered_at", "last_severity"]
    assert found["intervention_active"] == ["room", "key", "intervention_id"]
