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
row ``raise_`` locks), ``{p}intervention_active`` (the guard: one row per active key),
``{p}intervention_suppressed`` (what was held back, counted per room, key and reason, not
stored one row a raise), ``{p}intervention_learned`` (each kind's learned step per room,
and the outcomes of its current block) and ``{p}intervention_policy_changes`` (each step
taken, with its reason).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

from heron.core.contexts import DEFAULT
from heron.db import DatabaseStore, Schema
from heron.errors import InputError, NotFound
from heron.interventions.guard import decide
from heron.interventions.learn import Learning
from heron.interventions.model import (
    Action,
    Condition,
    Delivery,
    Intervention,
    KindStats,
    Learned,
    Member,
    Outcome,
    PolicyChange,
    Pruned,
    Rendered,
)

FIELDS = (
    "id", "kind", "key", "room", "severity", "facts", "actor", "status", "text", "spoken",
    "actions", "seen_before", "created_at", "resolved_at", "audio_url", "outcome",
    "outcome_by", "outcome_at", "step", "context",
)  # fmt: skip
#: Ids deleted per statement when pruning (a bound on the statement's size).
PRUNE_BATCH = 500
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
        """
ALTER TABLE {p}interventions ADD COLUMN step integer NOT NULL DEFAULT 0;
CREATE INDEX {new}{p}interventions_by_age ON {p}interventions (created_at);
CREATE TABLE {new}{p}intervention_suppressed (
    room text NOT NULL,
    key text NOT NULL,
    status text NOT NULL CHECK (status IN ('suppressed_cooldown', 'suppressed_guard')),
    kind text NOT NULL,
    raised {bigint} NOT NULL,
    last_at {real} NOT NULL,
    PRIMARY KEY (room, key, status)
){keyed};
CREATE INDEX {new}{p}intervention_suppressed_by_age ON {p}intervention_suppressed (last_at);
CREATE TABLE {new}{p}intervention_learned (
    room text NOT NULL,
    kind text NOT NULL,
    step integer NOT NULL,
    accepted integer NOT NULL,
    dismissed integer NOT NULL,
    changed_at {real},
    PRIMARY KEY (room, kind)
){keyed};
CREATE TABLE {new}{p}intervention_policy_changes (
    id {serial},
    room text NOT NULL,
    kind text NOT NULL,
    from_step integer NOT NULL,
    to_step integer NOT NULL,
    reason text NOT NULL,
    by text NOT NULL,
    at {real} NOT NULL
);
CREATE INDEX {new}{p}intervention_policy_changes_by_room
    ON {p}intervention_policy_changes (room, id);
""",
        # Contexts: a room is a context's (``default`` for what was there before), so
        # every table keyed by room is keyed by (context, room) instead, rebuilt as its
        # primary key cannot be altered in place.
        """
ALTER TABLE {p}interventions ADD COLUMN context text NOT NULL DEFAULT 'default';
DROP INDEX {p}interventions_by_room;
DROP INDEX {p}interventions_by_key;
CREATE INDEX {new}{p}interventions_by_room ON {p}interventions (context, room, status, id);
CREATE INDEX {new}{p}interventions_by_key ON {p}interventions (context, room, key, status);
CREATE TABLE {new}{p}intervention_rooms_v3 (
    context text NOT NULL,
    room text NOT NULL,
    last_id {bigint},
    last_delivered_at {real},
    last_severity text,
    PRIMARY KEY (context, room)
){keyed};
INSERT INTO {p}intervention_rooms_v3 (context, room, last_id, last_delivered_at, last_severity)
    SELECT 'default', room, last_id, last_delivered_at, last_severity
    FROM {p}intervention_rooms;
DROP TABLE {p}intervention_rooms;
ALTER TABLE {p}intervention_rooms_v3 RENAME TO {p}intervention_rooms;
CREATE TABLE {new}{p}intervention_active_v3 (
    context text NOT NULL,
    room text NOT NULL,
    key text NOT NULL,
    intervention_id {bigint} NOT NULL REFERENCES {p}interventions (id),
    PRIMARY KEY (context, room, key)
){keyed};
INSERT INTO {p}intervention_active_v3 (context, room, key, intervention_id)
    SELECT 'default', room, key, intervention_id FROM {p}intervention_active;
DROP TABLE {p}intervention_active;
ALTER TABLE {p}intervention_active_v3 RENAME TO {p}intervention_active;
CREATE TABLE {new}{p}intervention_suppressed_v3 (
    context text NOT NULL,
    room text NOT NULL,
    key text NOT NULL,
    status text NOT NULL CHECK (status IN ('suppressed_cooldown', 'suppressed_guard')),
    kind text NOT NULL,
    raised {bigint} NOT NULL,
    last_at {real} NOT NULL,
    PRIMARY KEY (context, room, key, status)
){keyed};
INSERT INTO {p}intervention_suppressed_v3 (context, room, key, status, kind, raised, last_at)
    SELECT 'default', room, key, status, kind, raised, last_at FROM {p}intervention_suppressed;
DROP TABLE {p}intervention_suppressed;
ALTER TABLE {p}intervention_suppressed_v3 RENAME TO {p}intervention_suppressed;
CREATE INDEX {new}{p}intervention_suppressed_by_age ON {p}intervention_suppressed (last_at);
CREATE TABLE {new}{p}intervention_learned_v3 (
    context text NOT NULL,
    room text NOT NULL,
    kind text NOT NULL,
    step integer NOT NULL,
    accepted integer NOT NULL,
    dismissed integer NOT NULL,
    changed_at {real},
    PRIMARY KEY (context, room, kind)
){keyed};
INSERT INTO {p}intervention_learned_v3
    (context, room, kind, step, accepted, dismissed, changed_at)
    SELECT 'default', room, kind, step, accepted, dismissed, changed_at
    FROM {p}intervention_learned;
DROP TABLE {p}intervention_learned;
ALTER TABLE {p}intervention_learned_v3 RENAME TO {p}intervention_learned;
ALTER TABLE {p}intervention_policy_changes ADD COLUMN context text NOT NULL DEFAULT 'default';
DROP INDEX {p}intervention_policy_changes_by_room;
CREATE INDEX {new}{p}intervention_policy_changes_by_room
    ON {p}intervention_policy_changes (context, room, id);
""",
        # People (issue 49): a room's roster, each person with the channel a ping to
        # them goes to.
        """
CREATE TABLE {new}{p}intervention_people (
    context text NOT NULL,
    room text NOT NULL,
    person text NOT NULL,
    channel text NOT NULL,
    shown text NOT NULL,
    joined_at {real} NOT NULL,
    PRIMARY KEY (context, room, person)
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


# A room is named by its context and its name: every statement on a room takes both.
_ENSURE_ROOM = (
    "INSERT INTO {p}intervention_rooms (context, room) VALUES (?, ?) "
    "ON CONFLICT (context, room) DO NOTHING"
)
_ROOM = (
    "SELECT last_id, last_delivered_at, last_severity FROM {p}intervention_rooms "
    "WHERE context = ? AND room = ?{lock}"
)
_ACTIVE = (
    "SELECT intervention_id FROM {p}intervention_active WHERE context = ? AND room = ? AND key = ?"
)
_SEEN = (
    "SELECT COUNT(*) AS n FROM {p}interventions "
    "WHERE context = ? AND room = ? AND key = ? AND status = 'delivered'"
)
_INSERT = (
    "INSERT INTO {p}interventions (kind, key, room, severity, facts, actor, status, text, "
    "spoken, actions, seen_before, created_at, step, context) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {columns}"
)
_DROP_MEMBER = "DELETE FROM {p}intervention_people WHERE context = ? AND room = ? AND person = ?"
_JOIN = (
    "INSERT INTO {p}intervention_people (context, room, person, channel, shown, joined_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_ROSTER = (
    "SELECT room, person, channel, shown, joined_at FROM {p}intervention_people "
    "WHERE context = ? AND room = ? ORDER BY person"
)
#: ``{where}``: `` AND context = ?`` for one context's, or nothing for all.
_STATS = """
SELECT kind, COUNT(*) AS delivered,
    SUM(CASE WHEN outcome = 'accept' THEN 1 ELSE 0 END) AS accepted,
    SUM(CASE WHEN outcome = 'dismiss' THEN 1 ELSE 0 END) AS dismissed
FROM {p}interventions WHERE status = 'delivered'{where} GROUP BY kind
"""
_SUPPRESSED_STATS = (
    "SELECT kind, status, SUM(raised) AS n FROM {p}intervention_suppressed WHERE 1 = 1{where} "
    "GROUP BY kind, status"
)
_COUNT_SUPPRESSED = (
    "INSERT INTO {p}intervention_suppressed (context, room, key, status, kind, raised, "
    "last_at) VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (context, room, key, status) DO UPDATE "
    "SET raised = {p}intervention_suppressed.raised + 1, last_at = excluded.last_at, "
    "kind = excluded.kind"
)
_LEARNED = "SELECT room, kind, step, accepted, dismissed, changed_at FROM {p}intervention_learned"
_LEARNED_ONE = _LEARNED + " WHERE context = ? AND room = ? AND kind = ?"
_ENSURE_LEARNED = (
    "INSERT INTO {p}intervention_learned (context, room, kind, step, accepted, dismissed) "
    "VALUES (?, ?, ?, 0, 0, 0) ON CONFLICT (context, room, kind) DO NOTHING"
)
_CHANGES = (
    "SELECT id, room, kind, from_step, to_step, reason, by, at FROM {p}intervention_policy_changes"
)
#: Per room, what lies beyond the newest ``keep`` rows of a table (``{order}``).
_BEYOND = (
    "SELECT {key} FROM (SELECT {key}, ROW_NUMBER() OVER (PARTITION BY context, room ORDER BY "
    "{order} DESC) AS n FROM {p}{table}) ranked WHERE n > ?"
)


def _intervention(row: Any, deliveries: tuple[Delivery, ...] = ()) -> Intervention:
    values = {name: row[name] for name in FIELDS}
    values["facts"] = json.loads(values["facts"])
    values["actions"] = tuple(Action(**a) for a in json.loads(values["actions"]))
    return Intervention(**values, deliveries=deliveries)


def _learned(row: Any) -> Learned:
    return Learned(
        row["room"], row["kind"], int(row["step"]), int(row["accepted"]),
        int(row["dismissed"]), row["changed_at"],
    )  # fmt: skip


def _beyond(key: str, order: str, table: str) -> str:
    """The ``key`` of ``table``'s rows beyond the newest ``?`` (by ``order``) of each room."""
    return _BEYOND.replace("{key}", key).replace("{order}", order).replace("{table}", table)


def _filter(**equal: str | None) -> tuple[str, tuple[str, ...]]:
    """`` WHERE a = ? AND b = ?`` for the columns given a value, and their values."""
    given = {column: value for column, value in equal.items() if value is not None}
    if not given:
        return "", ()
    return " WHERE " + " AND ".join(f"{c} = ?" for c in given), tuple(given.values())


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
        self,
        condition: Condition,
        render: Callable[[int], Rendered],
        *,
        cooldown: float,
        learning: Learning | None = None,
    ) -> Intervention:
        c = condition
        with self._tx(write=True) as db:
            where = (c.context, c.room)
            self._run(db, _ENSURE_ROOM, where)
            room = self._run(db, _ROOM, where).fetchone()  # locked until commit
            now = time.time()
            step, cooldown = self._learned_cooldown(db, c, cooldown, learning)
            active = self._run(db, _ACTIVE, (*where, c.key)).fetchone() is not None
            status = decide(
                active=active,
                last_delivered_at=room["last_delivered_at"],
                now=now,
                cooldown=cooldown,
                severity=c.severity,
                last_severity=room["last_severity"],
            )
            seen = int(self._run(db, _SEEN, (*where, c.key)).fetchone()["n"])
            if status != "delivered":  # counted, not stored: a storm costs one row a key
                self._run(db, _COUNT_SUPPRESSED, (*where, c.key, status, c.kind, now))
                return Intervention(
                    0, c.kind, c.key, c.room, c.severity, c.facts, c.actor, status, "", "",
                    (), seen, now, step=step, context=c.context,
                )  # fmt: skip
            row = self._insert(db, c, status, render(seen), seen, now, step)
            self._run(
                db,
                "INSERT INTO {p}intervention_active (context, room, key, intervention_id) "
                "VALUES (?, ?, ?, ?)",
                (*where, c.key, row["id"]),
            )
            if cooldown > 0:  # a kind exempt from the cooldown does not start one
                self._run(
                    db,
                    "UPDATE {p}intervention_rooms SET last_id = ?, last_delivered_at = ?, "
                    "last_severity = ? WHERE context = ? AND room = ?",
                    (row["id"], now, c.severity, *where),
                )
            return _intervention(row)

    def _learned_cooldown(
        self, db: Connection, c: Condition, cooldown: float, learning: Learning | None
    ) -> tuple[int, float]:
        """The step ``learning`` reached for ``c``'s kind in its room, and the cooldown
        at that step (0 and ``cooldown`` as they are without learning)."""
        if learning is None:
            return 0, cooldown
        learned = self._run(db, _LEARNED_ONE, (c.context, c.room, c.kind)).fetchone()
        step = int(learned["step"]) if learned else 0
        return step, learning.cooldown(cooldown, step)

    def _insert(
        self,
        db: Connection,
        c: Condition,
        status: str,
        words: Rendered,
        seen: int,
        now: float,
        step: int,
    ) -> Any:
        """Store a delivered intervention of ``c`` in ``words``; its row."""
        actions = json.dumps([asdict(a) for a in words.actions])
        return self._run(
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
                step,
                c.context,
            ),
        ).fetchone()

    def resolve(self, room: str, key: str, *, context: str = DEFAULT) -> Intervention:
        with self._tx(write=True) as db:
            held = self._run(db, _ROOM, (context, room)).fetchone()
            if held is None:
                raise NotFound(
                    f"No interventions in room {room!r}. List the rooms' interventions with: "
                    "heron interventions list"
                )
            active = self._run(db, _ACTIVE, (context, room, key)).fetchone()
            if active is None:
                raise NotFound(
                    f"Nothing is active for {key!r} in room {room!r}: it was resolved already "
                    f"or never sent. See: heron interventions list --room {room} --active"
                )
            intervention_id = active["intervention_id"]
            self._run(
                db,
                "DELETE FROM {p}intervention_active WHERE context = ? AND room = ? AND key = ?",
                (context, room, key),
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
                    "last_severity = NULL WHERE context = ? AND room = ?",
                    (context, room),
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

    def outcome(
        self,
        intervention_id: int,
        outcome: Outcome,
        by: str,
        *,
        learning: Learning | None = None,
    ) -> Intervention:
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
            now = time.time()
            self._run(
                db,
                "UPDATE {p}interventions SET outcome = ?, outcome_by = ?, outcome_at = ? "
                "WHERE id = ?",
                (outcome, by, now, intervention_id),
            )
            if learning is not None:
                self._learn(db, (found.context, found.room), found.kind, outcome, learning, now)
            return self._get(db, intervention_id)

    def _learn(
        self,
        db: Connection,
        room: tuple[str, str],
        kind: str,
        outcome: Outcome,
        rule: Learning,
        now: float,
    ) -> None:
        """Count ``outcome`` in the kind's block in ``room`` (its context and name); a
        full block is decided (``learn``)."""
        self._run(db, _ENSURE_LEARNED, (*room, kind))
        column = "accepted" if outcome == "accept" else "dismissed"
        self._run(
            db,
            f"UPDATE {{p}}intervention_learned SET {column} = {column} + 1 "
            "WHERE context = ? AND room = ? AND kind = ?",
            (*room, kind),
        )
        row = self._run(db, _LEARNED_ONE + "{lock}", (*room, kind)).fetchone()
        if row["accepted"] + row["dismissed"] < rule.outcomes:
            return
        step = int(row["step"])
        decided = rule.next_step(step, accepted=row["accepted"], dismissed=row["dismissed"])
        to_step, changed = (step, row["changed_at"]) if decided is None else (decided[0], now)
        self._run(
            db,
            "UPDATE {p}intervention_learned SET step = ?, accepted = 0, dismissed = 0, "
            "changed_at = ? WHERE context = ? AND room = ? AND kind = ?",
            (to_step, changed, *room, kind),
        )
        if decided is not None:
            self._change(db, room, kind, step, to_step, decided[1], "learning", now)

    def _change(
        self,
        db: Connection,
        room: tuple[str, str],
        kind: str,
        from_step: int,
        to_step: int,
        reason: str,
        by: str,
        now: float,
    ) -> None:
        self._run(
            db,
            "INSERT INTO {p}intervention_policy_changes (context, room, kind, from_step, "
            "to_step, reason, by, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*room, kind, from_step, to_step, reason, by, now),
        )

    def reset(self, room: str, kind: str, by: str, *, context: str = DEFAULT) -> Learned:
        where = (context, room)
        with self._tx(write=True) as db:
            row = self._run(db, _LEARNED_ONE + "{lock}", (*where, kind)).fetchone()
            if row is None:
                raise NotFound(
                    f"Nothing was learned for {kind!r} in room {room!r}: it runs as its "
                    "policy says. See: heron interventions stats"
                )
            now = time.time()
            if row["step"] != 0:
                reason = f"reset by {by} to the policy as written"
                self._change(db, where, kind, int(row["step"]), 0, reason, by, now)
            self._run(
                db,
                "UPDATE {p}intervention_learned SET step = 0, accepted = 0, dismissed = 0, "
                "changed_at = ? WHERE context = ? AND room = ? AND kind = ?",
                (now if row["step"] != 0 else row["changed_at"], *where, kind),
            )
            return _learned(self._run(db, _LEARNED_ONE, (*where, kind)).fetchone())

    def learned(self, room: str | None = None, *, context: str | None = None) -> list[Learned]:
        where, args = _filter(context=context, room=room)
        with self._tx() as db:
            rows = self._run(db, _LEARNED + where + " ORDER BY room, kind", args).fetchall()
        return [_learned(row) for row in rows]

    def changes(
        self, room: str | None = None, limit: int = 100, *, context: str | None = None
    ) -> list[PolicyChange]:
        where, args = _filter(context=context, room=room)
        sql = _CHANGES + where + " ORDER BY id DESC LIMIT ?"
        with self._tx() as db:
            rows = self._run(db, sql, (*args, limit)).fetchall()
        return [
            PolicyChange(**{k: row[k] for k in PolicyChange.__dataclass_fields__}) for row in rows
        ]

    # -- retention ----------------------------------------------------------------------

    def prune(
        self, *, before: float, keep_per_room: int, keep_total: int | None = None
    ) -> tuple[Pruned, list[str]]:
        total = keep_per_room * 100 if keep_total is None else keep_total
        with self._tx(write=True) as db:
            doomed = [
                r["id"]
                for r in self._run(
                    db,
                    "SELECT id FROM {p}interventions WHERE created_at < ? UNION "
                    + _beyond("id", "id", "interventions")
                    + " UNION SELECT id FROM {p}interventions WHERE id <= (SELECT id FROM "
                    "{p}interventions ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (before, keep_per_room, total),
                ).fetchall()
            ]
            audio = self._delete(db, doomed)
            suppressed = self._prune_suppressed(db, before, keep_per_room, total)
            changes = self._run(
                db, "DELETE FROM {p}intervention_policy_changes WHERE at < ?", (before,)
            ).rowcount
            changes += self._run(
                db,
                "DELETE FROM {p}intervention_policy_changes WHERE id IN ("
                + _beyond("id", "id", "intervention_policy_changes")
                + ")",
                (keep_per_room,),
            ).rowcount
            # A room nothing is left of, and whose cooldown is long over, goes too; so does
            # a kind's learning there once it is back at its policy.
            self._run(
                db,
                "DELETE FROM {p}intervention_rooms WHERE (last_delivered_at IS NULL OR "
                "last_delivered_at < ?) AND (context, room) NOT IN (SELECT context, room FROM "
                "{p}interventions) AND (context, room) NOT IN (SELECT context, room FROM "
                "{p}intervention_suppressed)",
                (before,),
            )
            self._run(
                db,
                "DELETE FROM {p}intervention_learned WHERE step = 0 AND (changed_at IS NULL "
                "OR changed_at < ?) AND (context, room) NOT IN (SELECT context, room FROM "
                "{p}interventions)",
                (before,),
            )
        return Pruned(len(doomed), suppressed, changes), audio

    def _delete(self, db: Connection, doomed: list[int]) -> list[str]:
        """Delete the interventions ``doomed``, with their deliveries and guards, in
        batches of ``PRUNE_BATCH``; their audio URLs."""
        audio: list[str] = []
        for start in range(0, len(doomed), PRUNE_BATCH):
            batch = tuple(doomed[start : start + PRUNE_BATCH])
            marks = "(" + ", ".join("?" * len(batch)) + ")"
            audio += [
                r["audio_url"]
                for r in self._run(
                    db,
                    "SELECT audio_url FROM {p}interventions WHERE audio_url IS NOT NULL "
                    "AND id IN " + marks,
                    batch,
                ).fetchall()
            ]
            for table, column in (
                ("intervention_deliveries", "intervention_id"),
                ("intervention_active", "intervention_id"),
                ("interventions", "id"),
            ):
                self._run(db, f"DELETE FROM {{p}}{table} WHERE {column} IN " + marks, batch)
        return audio

    def _prune_suppressed(
        self, db: Connection, before: float, keep_per_room: int, total: int
    ) -> int:
        """Delete the suppressed counts by ``prune``'s rules; how many."""
        suppressed = self._run(
            db, "DELETE FROM {p}intervention_suppressed WHERE last_at < ?", (before,)
        ).rowcount
        suppressed += self._run(
            db,
            "DELETE FROM {p}intervention_suppressed WHERE (context, room, key, status) IN ("
            + _beyond("context, room, key, status", "last_at", "intervention_suppressed")
            + ")",
            (keep_per_room,),
        ).rowcount
        # However many rooms a storm names, the counts are bounded in all.
        suppressed += self._run(
            db,
            "DELETE FROM {p}intervention_suppressed WHERE last_at < (SELECT last_at FROM "
            "{p}intervention_suppressed ORDER BY last_at DESC LIMIT 1 OFFSET ?)",
            (total,),
        ).rowcount
        return suppressed

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
        self,
        room: str | None = None,
        *,
        limit: int = 100,
        active_only: bool = False,
        context: str | None = None,
    ) -> list[Intervention]:
        where, args = [], []
        for column, value in (("context", context), ("room", room)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if active_only:
            where.append("status = 'delivered' AND resolved_at IS NULL")
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        sql = "SELECT {columns} FROM {p}interventions " + clause + "ORDER BY id DESC LIMIT ?"
        with self._tx() as db:
            return self._with_deliveries(db, self._run(db, sql, (*args, limit)).fetchall())

    def cards(
        self, room: str, after: int = 0, limit: int = 1000, *, context: str = DEFAULT
    ) -> list[Intervention]:
        sql = (
            "SELECT {columns} FROM {p}interventions WHERE context = ? AND room = ? "
            "AND status = 'delivered' AND id > ? ORDER BY id LIMIT ?"
        )
        args = (context, room, after, limit)
        with self._tx() as db:
            return self._with_deliveries(db, self._run(db, sql, args).fetchall())

    def get_many(self, ids: list[int]) -> list[Intervention]:
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        sql = "SELECT {columns} FROM {p}interventions WHERE id IN (" + marks + ") ORDER BY id"
        with self._tx() as db:
            return [_intervention(row) for row in self._run(db, sql, tuple(ids)).fetchall()]

    # -- people -------------------------------------------------------------------------

    def join(self, member: Member, *, context: str = DEFAULT) -> Member:
        with self._tx(write=True) as db:
            self._run(db, _DROP_MEMBER, (context, member.room, member.person))
            self._run(
                db,
                _JOIN,
                (
                    context,
                    member.room,
                    member.person,
                    member.channel,
                    member.shown,
                    member.joined_at,
                ),
            )
        return member

    def leave(self, room: str, person: str, *, context: str = DEFAULT) -> bool:
        with self._tx(write=True) as db:
            return bool(self._run(db, _DROP_MEMBER, (context, room, person)).rowcount)

    def roster(self, room: str, *, context: str = DEFAULT) -> list[Member]:
        with self._tx() as db:
            rows = self._run(db, _ROSTER, (context, room)).fetchall()
        return [
            Member(r["room"], r["person"], r["channel"], r["shown"], r["joined_at"]) for r in rows
        ]

    def stats(self, *, context: str | None = None) -> list[KindStats]:
        where, args = ("", ()) if context is None else (" AND context = ?", (context,))
        with self._tx() as db:
            rows = self._run(db, _STATS.replace("{where}", where), args).fetchall()
            shown = {row["kind"]: row for row in rows}
            held = self._run(db, _SUPPRESSED_STATS.replace("{where}", where), args).fetchall()
        counts: dict[str, dict[str, int]] = {}
        for kind, row in shown.items():
            counts[kind] = {
                "delivered": int(row["delivered"]),
                "accepted": int(row["accepted"] or 0),
                "dismissed": int(row["dismissed"] or 0),
            }
        for row in held:
            counts.setdefault(row["kind"], {})[row["status"]] = int(row["n"])
        found = []
        for kind in sorted(counts):
            c = counts[kind]
            held_back = c.get("suppressed_cooldown", 0) + c.get("suppressed_guard", 0)
            found.append(
                KindStats(
                    kind,
                    c.get("delivered", 0) + held_back,
                    c.get("delivered", 0),
                    c.get("suppressed_cooldown", 0),
                    c.get("suppressed_guard", 0),
                    c.get("accepted", 0),
                    c.get("dismissed", 0),
                )
            )
        return found
