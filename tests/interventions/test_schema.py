"""The intervention tables, written once (``heron.interventions.sql.INTERVENTIONS``), are the same
on SQLite and on PostgreSQL, and PostgreSQL's migration 1 stays what databases applied."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sqlite3

from heron.core.contexts import DEFAULT
from heron.db import POSTGRES
from heron.interventions.model import Condition, Rendered
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
    rooms = ["context", "room", "last_id", "last_delivered_at", "last_severity"]
    assert found["intervention_rooms"] == rooms
    assert found["intervention_active"] == ["context", "room", "key", "intervention_id"]


def test_rooms_of_before_contexts_become_the_default_contexts(backend: Backend) -> None:
    # A database of migration 2, with a card active in room team, opened by this Heron.
    before = dataclasses.replace(INTERVENTIONS, migrations=INTERVENTIONS.migrations[:2])
    database = backend.database(before)
    with database.connection(write=True) as db:
        db.execute(
            database.dialect.sql(
                "INSERT INTO {p}interventions (kind, key, room, severity, facts, status, text, "
                "spoken, actions, seen_before, created_at) VALUES "
                "('notice', 'n1', 'team', 'info', '{{}}', 'delivered', 'hi', 'hi', '[]', 0, 1.0)"
            )
        )
        db.execute(database.dialect.sql("INSERT INTO {p}intervention_rooms (room) VALUES ('team')"))
        db.execute(
            database.dialect.sql(
                "INSERT INTO {p}intervention_active (room, key, intervention_id) "
                "VALUES ('team', 'n1', 1)"
            )
        )
    database.close()
    store = open_store(backend)
    try:
        [old] = store.list()
        assert (old.context, old.room) == (DEFAULT, "team")
        again = Condition("notice", "n1", "team", "info", {"message": "hi"})
        assert store.raise_(again, render, cooldown=0).status == "suppressed_guard"
        elsewhere = dataclasses.replace(again, context="kube")  # the same room name, not room
        sent = store.raise_(elsewhere, render, cooldown=0)
        assert sent.status == "delivered" and sent.context == "kube"
        assert [i.id for i in store.list(context="kube")] == [sent.id]
        assert [i.id for i in store.cards("team", context=DEFAULT)] == [old.id]
    finally:
        store.close()


def render(seen: int) -> Rendered:
    return Rendered("hi", "hi", ())
