"""The intervention store, written once in SQL for both backends:
``SQLInterventionStore`` and ``INTERVENTIONS``.

It keeps the ``InterventionStore`` contract (``heron.interventions.base``) over a
``heron.db`` database (one transaction per call), whose ``Dialect`` says how its SQL
differs.

On SQLite (``interventions.db`` next to the store's ``heron.db``, a file of its own for the
reason ``jobs.db`` has one), ``BEGIN IMMEDIATE`` takes the file's write lock before
``raise_`` reads the room's cooldown and the key's guard, so the decision and its write
are one step for every thread and process on the file. On PostgreSQL, ``raise_`` locks the
room's row (``SELECT ... FOR UPDATE``) before it reads them, so servers raising the same
condition at once take turns on that room, and exactly one of them sends it; rooms do not
wait on one another.

Tables (``{p}`` is the dialect's prefix): ``{p}interventions`` (one row per condition
raised, sent or not), ``{p}intervention_deliveries`` (one row per channel tried),
``{p}intervention_rooms`` (each room's last delivered intervention: the cooldown, and the
row ``raise_`` locks) and ``{p}intervention_active`` (the guard: one row per active key).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

from heron.db import DatabaseStore, Schema
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

FIELDS = (
    "id", "kind", "key", "room", "severity", "facts", "actor", "status", "text", "spoken",
    "actions", "seen_before", "created_at", "resolved_at", "audio_url", "outcome",
    "outcome_by", "outcome_at",
)  # fmt: skip
COLUMNS = ", ".join(FIELDS)


#: The tables, in ``heron.db.dialect``'s notation; on PostgreSQL its migrations table is
#: ``heron_intervention_migrations``. A new column is a new migration.
INTERVENTIONS = Schema(
    name="interventions",
    noun="intervention",
    what="the intervention store",
    migrations=(
        """
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
""",
    ),
    rebuild=(
        "a new, empty intervention store starts on the next use (the history stays in the "
        "moved file)"
    ),
    advice="then raise the condition again (nothing was written)",
    reopen="heron.interventions.open_interventions()",
)


class Connection(Protocol):
    def execute(self, sql: Any, parameters: Any = ..., /) -> Any: ...


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
    """The ``InterventionStore`` on a database opened with ``INTERVENTIONS``; safe to share
    between threads, processes and (on PostgreSQL) servers."""

    def _run(self, db: Connection, sql: str, args: tuple[Any, ...] = ()) -> Any:
        return db.execute(self.dialect.sql(sql, COLUMNS), args)

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
