"""The intervention store's algorithm, written once in SQL: ``SQLInterventionStore``.

It keeps the ``InterventionStore`` contract (``heron.interventions.base``) over a
``heron.store.database`` driver (``SQLiteDatabase``, ``PostgresDatabase``: one
transaction per call) and a ``Dialect``. A backend is one file that names its dialect
and builds its database from ``SCHEMA`` in that dialect (SQLite's schema, run on every
open; PostgreSQL's first migration).

Tables (``{p}`` is the dialect's prefix): ``{p}interventions`` (one row per condition
raised, sent or not), ``{p}intervention_deliveries`` (one row per channel tried),
``{p}intervention_rooms`` (each room's last delivered intervention: the cooldown, and the
row ``raise_`` locks) and ``{p}intervention_active`` (the guard: one row per active key).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal, Protocol

from heron.errors import InputError, NotFound
from heron.interventions.guard import decide
from heron.interventions.model import (
    Action,
    Condition,
    Delivery,
    Intervention,
    KindStats,
    Outcome,
    Rendered,
)
from heron.store.database import Database, DatabaseStore

FIELDS = (
    "id", "kind", "key", "room", "severity", "facts", "actor", "status", "text", "spoken",
    "actions", "seen_before", "created_at", "resolved_at", "audio_url", "outcome",
    "outcome_by", "outcome_at",
)  # fmt: skip
COLUMNS = ", ".join(FIELDS)


#: ``SCHEMA``'s words on SQLite and on PostgreSQL: the key column, floating-point seconds, a
#: row id that refers to another, a truth value; ``IF NOT EXISTS`` where the schema runs on
#: every open (SQLite; PostgreSQL's is a migration, run once); after a table keyed by text
#: alone, what has SQLite store its rows in the key's b-tree.
WORDS = {
    "serial": ("INTEGER PRIMARY KEY AUTOINCREMENT", "bigserial PRIMARY KEY"),
    "real": ("REAL", "double precision"),
    "bigint": ("INTEGER", "bigint"),
    "boolean": ("INTEGER", "boolean"),
    "new": ("IF NOT EXISTS ", ""),
    "keyed": (" WITHOUT ROWID", ""),
}
#: The tables, written once for both backends. PostgreSQL applied this as migration 1 and
#: records it by number, so an edit here reaches new databases only: a new column is a new
#: migration there (``heron.interventions.postgres``) and an ``ALTER TABLE`` on SQLite.
SCHEMA = """
CREATE TABLE {new}{p}interventions (
    id {serial},
    kind text NOT NULL,
    key text NOT NULL,
    room text NOT NULL,
    severity text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    facts text NOT NULL,
    actor text NOT NULL DEFAULT '',
    status text NOT NULL
        CHECK (status IN ('delivered', 'suppressed_cooldown', 'suppressed_guard')),
    text text NOT NULL,
    spoken text NOT NULL,
    actions text NOT NULL,
    seen_before integer NOT NULL,
    created_at {real} NOT NULL,
    resolved_at {real},
    audio_url text,
    outcome text CHECK (outcome IN ('accept', 'dismiss')),
    outcome_by text,
    outcome_at {real}
);
CREATE INDEX {new}{p}interventions_by_room ON {p}interventions (room, status, id);
CREATE INDEX {new}{p}interventions_by_key ON {p}interventions (room, key, status);
CREATE INDEX {new}{p}interventions_by_kind ON {p}interventions (kind, status, outcome);
CREATE TABLE {new}{p}intervention_deliveries (
    id {serial},
    intervention_id {bigint} NOT NULL REFERENCES {p}interventions (id) ON DELETE CASCADE,
    channel text NOT NULL,
    target text NOT NULL,
    ok {boolean} NOT NULL,
    attempts integer NOT NULL,
    error text,
    at {real} NOT NULL
);
CREATE INDEX {new}{p}intervention_deliveries_of ON {p}intervention_deliveries (intervention_id);
CREATE TABLE {new}{p}intervention_rooms (
    room text PRIMARY KEY,
    last_id {bigint},
    last_delivered_at {real},
    last_severity text
){keyed};
CREATE TABLE {new}{p}intervention_active (
    room text NOT NULL,
    key text NOT NULL,
    intervention_id {bigint} NOT NULL REFERENCES {p}interventions (id),
    PRIMARY KEY (room, key)
){keyed};
"""


class Connection(Protocol):
    def execute(self, sql: Any, parameters: Any = ..., /) -> Any: ...


@dataclass(frozen=True)
class Dialect:
    #: The driver's placeholder: ``?`` (sqlite3) or ``%s`` (psycopg).
    param: str
    #: Before every table name: ``heron_`` on PostgreSQL, whose database others share.
    prefix: str = ""
    #: After a SELECT whose row the change then writes: ``FOR UPDATE`` where the
    #: transaction does not already hold the whole database.
    lock_row: str = ""
    #: Whose words ``SCHEMA`` is written in (``WORDS``).
    backend: Literal["sqlite", "postgresql"] = "sqlite"

    def sql(self, text: str) -> str:
        """``text`` with ``{p}``, ``{columns}`` and ``{lock}`` filled, ``?`` the driver's."""
        return _render(self, text)

    def schema(self) -> str:
        """``SCHEMA`` in this dialect's words."""
        column = 1 if self.backend == "postgresql" else 0
        words = {name: pair[column] for name, pair in WORDS.items()}
        return SCHEMA.format(p=self.prefix, **words)


@functools.lru_cache(maxsize=128)
def _render(dialect: Dialect, text: str) -> str:
    filled = text.format(p=dialect.prefix, columns=COLUMNS, lock=dialect.lock_row)
    return filled.replace("?", dialect.param)


_ENSURE_ROOM = "INSERT INTO {p}intervention_rooms (room) VALUES (?) ON CONFLICT (room) DO NOTHING"
_ROOM = (
    "SELECT last_id, last_delivered_at, last_severity FROM {p}intervention_rooms "
    "WHERE room = ?{lock}"
)
_ACTIVE = "SELECT intervention_id FROM {p}intervention_active WHERE room = ? AND key = ?"
_SEEN = (
    "SELECT COUNT(*) AS n FROM {p}interventions WHERE room = ? AND key = ? AND status = 'delivered'"
)
_INSERT = (
    "INSERT INTO {p}interventions (kind, key, room, severity, facts, actor, status, text, "
    "spoken, actions, seen_before, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "RETURNING {columns}"
)
_STATS = """
SELECT kind, COUNT(*) AS raised,
    SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END) AS delivered,
    SUM(CASE WHEN status = 'suppressed_cooldown' THEN 1 ELSE 0 END) AS suppressed_cooldown,
    SUM(CASE WHEN status = 'suppressed_guard' THEN 1 ELSE 0 END) AS suppressed_guard,
    SUM(CASE WHEN outcome = 'accept' THEN 1 ELSE 0 END) AS accepted,
    SUM(CASE WHEN outcome = 'dismiss' THEN 1 ELSE 0 END) AS dismissed
FROM {p}interventions GROUP BY kind ORDER BY kind
"""


def _intervention(row: Any, deliveries: tuple[Delivery, ...] = ()) -> Intervention:
    values = {name: row[name] for name in FIELDS}
    values["facts"] = json.loads(values["facts"])
    values["actions"] = tuple(Action(**a) for a in json.loads(values["actions"]))
    return Intervention(**values, deliveries=deliveries)


def _delivery(row: Any) -> Delivery:
    return Delivery(
        row["channel"], row["target"], bool(row["ok"]), row["attempts"], row["error"], row["at"]
    )


class SQLInterventionStore(DatabaseStore):
    """The ``InterventionStore`` algorithm over a driver and a ``Dialect``; ``what`` names
    the database in errors: "the intervention store /srv/x.db"."""

    dialect: ClassVar[Dialect]

    def __init__(self, database: Database, what: str) -> None:
        super().__init__(database, what, reopen="heron.interventions.open_interventions()")

    def _run(self, db: Connection, sql: str, args: tuple[Any, ...] = ()) -> Any:
        return db.execute(self.dialect.sql(sql), args)

    # -- deciding -----------------------------------------------------------------------

    def raise_(
        self, condition: Condition, render: Callable[[int], Rendered], *, cooldown: float
    ) -> Intervention:
        c = condition
        with self._tx(write=True) as db:
            self._run(db, _ENSURE_ROOM, (c.room,))
            room = self._run(db, _ROOM, (c.room,)).fetchone()  # locked until commit
            now = time.time()
            active = self._run(db, _ACTIVE, (c.room, c.key)).fetchone() is not None
            status = decide(
                active=active,
                last_delivered_at=room["last_delivered_at"],
                now=now,
                cooldown=cooldown,
                severity=c.severity,
                last_severity=room["last_severity"],
            )
            seen = int(self._run(db, _SEEN, (c.room, c.key)).fetchone()["n"])
            words = render(seen)
            actions = json.dumps([asdict(a) for a in words.actions])
            row = self._run(
                db,
                _INSERT,
                (
                    c.kind,
                    c.key,
                    c.room,
                    c.severity,
                    json.dumps(c.facts),
                    c.actor,
                    status,
                    words.text,
                    words.spoken,
                    actions,
                    seen,
                    now,
                ),
            ).fetchone()
            if status == "delivered":
                self._run(
                    db,
                    "INSERT INTO {p}intervention_active (room, key, intervention_id) "
                    "VALUES (?, ?, ?)",
                    (c.room, c.key, row["id"]),
                )
                if cooldown > 0:  # a kind exempt from the cooldown does not start one
                    self._run(
                        db,
                        "UPDATE {p}intervention_rooms SET last_id = ?, last_delivered_at = ?, "
                        "last_severity = ? WHERE room = ?",
                        (row["id"], now, c.severity, c.room),
                    )
            return _intervention(row)

    def resolve(self, room: str, key: str) -> Intervention:
        with self._tx(write=True) as db:
            held = self._run(db, _ROOM, (room,)).fetchone()
            if held is None:
                raise NotFound(
                    f"No interventions in room {room!r}. List the rooms' interventions with: "
                    "heron interventions list"
                )
            active = self._run(db, _ACTIVE, (room, key)).fetchone()
            if active is None:
                raise NotFound(
                    f"Nothing is active for {key!r} in room {room!r}: it was resolved already "
                    f"or never sent. See: heron interventions list --room {room} --active"
                )
            intervention_id = active["intervention_id"]
            self._run(
                db, "DELETE FROM {p}intervention_active WHERE room = ? AND key = ?", (room, key)
            )
            self._run(
                db,
                "UPDATE {p}interventions SET resolved_at = ? WHERE id = ?",
                (time.time(), intervention_id),
            )
            if held["last_id"] == intervention_id:
                self._run(
                    db,
                    "UPDATE {p}intervention_rooms SET last_delivered_at = NULL, "
                    "last_severity = NULL WHERE room = ?",
                    (room,),
                )
            return self._get(db, intervention_id)

    # -- after the decision -------------------------------------------------------------

    def deliver(
        self, intervention_id: int, delivery: Delivery, *, audio_url: str | None = None
    ) -> None:
        d = delivery
        with self._tx(write=True) as db:
            self._get(db, intervention_id, lock=True)
            self._run(
                db,
                "INSERT INTO {p}intervention_deliveries (intervention_id, channel, target, ok, "
                "attempts, error, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (intervention_id, d.channel, d.target, d.ok, d.attempts, d.error, d.at),
            )
            if audio_url is not None:
                self._run(
                    db,
                    "UPDATE {p}interventions SET audio_url = ? WHERE id = ?",
                    (audio_url, intervention_id),
                )

    def outcome(self, intervention_id: int, outcome: Outcome, by: str) -> Intervention:
        with self._tx(write=True) as db:
            found = self._get(db, intervention_id, lock=True)
            if found.outcome is not None:
                raise InputError(
                    f"Intervention {intervention_id} already has its outcome: {found.outcome} "
                    f"by {found.outcome_by}. An outcome is given once."
                )
            if not found.delivered:
                raise InputError(
                    f"Intervention {intervention_id} was never shown ({found.status}), so it "
                    "has no outcome to give."
                )
            self._run(
                db,
                "UPDATE {p}interventions SET outcome = ?, outcome_by = ?, outcome_at = ? "
                "WHERE id = ?",
                (outcome, by, time.time(), intervention_id),
            )
            return self._get(db, intervention_id)

    # -- reading ------------------------------------------------------------------------

    def _get(self, db: Connection, intervention_id: int, *, lock: bool = False) -> Intervention:
        sql = "SELECT {columns} FROM {p}interventions WHERE id = ?" + ("{lock}" if lock else "")
        row = self._run(db, sql, (intervention_id,)).fetchone()
        if row is None:
            raise NotFound(
                f"No intervention {intervention_id}. List them with: heron interventions list"
            )
        return self._with_deliveries(db, [row])[0]

    def _with_deliveries(self, db: Connection, rows: list[Any]) -> list[Intervention]:
        if not rows:
            return []
        ids = [row["id"] for row in rows]
        found: dict[int, list[Delivery]] = {i: [] for i in ids}
        marks = ", ".join("?" * len(ids))
        for d in self._run(
            db,
            "SELECT intervention_id, channel, target, ok, attempts, error, at FROM "
            "{p}intervention_deliveries WHERE intervention_id IN (" + marks + ") ORDER BY id",
            tuple(ids),
        ).fetchall():
            found[d["intervention_id"]].append(_delivery(d))
        return [_intervention(row, tuple(found[row["id"]])) for row in rows]

    def get(self, intervention_id: int) -> Intervention:
        with self._tx() as db:
            return self._get(db, intervention_id)

    def list(
        self, room: str | None = None, *, limit: int = 100, active_only: bool = False
    ) -> list[Intervention]:
        where, args = [], []
        if room is not None:
            where.append("room = ?")
            args.append(room)
        if active_only:
            where.append("status = 'delivered' AND resolved_at IS NULL")
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        sql = "SELECT {columns} FROM {p}interventions " + clause + "ORDER BY id DESC LIMIT ?"
        with self._tx() as db:
            return self._with_deliveries(db, self._run(db, sql, (*args, limit)).fetchall())

    def cards(self, room: str, after: int = 0, limit: int = 1000) -> list[Intervention]:
        sql = (
            "SELECT {columns} FROM {p}interventions WHERE room = ? AND status = 'delivered' "
            "AND id > ? ORDER BY id LIMIT ?"
        )
        with self._tx() as db:
            return self._with_deliveries(db, self._run(db, sql, (room, after, limit)).fetchall())

    def stats(self) -> list[KindStats]:
        with self._tx() as db:
            rows = self._run(db, _STATS).fetchall()
        counts = [name for name in KindStats.__dataclass_fields__ if name != "kind"]
        return [KindStats(row["kind"], *(int(row[name]) for name in counts)) for row in rows]
