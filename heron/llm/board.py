"""Model cooldowns shared by the replicas of one PostgreSQL (``heron_model_cooldowns``).

A process's ``heron.llm.cooldowns.Cooldowns`` keeps its own record; with a ``Board`` it
also tells the others. When a model cools on one replica, the board holds it until the
cooldown's end (Unix time), so every replica skips it: another replica's first request
no longer waits a whole timeout on a hung provider to find out. Each replica reads the
board at most every ``CACHE`` seconds (one query, the table holds a row per cooled
model), so a model nobody cooled costs no query of its own. When a cooldown ends, one
probe is claimed in the database (the row locked, ``probe_until`` set): one request on
one replica tries the model, the others keep skipping it until it answers (the row is
deleted: healthy again) or fails (cooled again). A probe not answered by its deadline
counts as failed, as on one machine. Failures are counted per replica
(``allowed_fails`` within a minute); the board shares what they decide.

What goes wrong with the database never fails a model call: the replica goes on with its
own record, and the warning is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from heron.db import Database, Schema, open_database
from heron.errors import HeronError
from heron.settings import Settings

log = logging.getLogger("heron.llm")

#: Seconds a replica trusts what it last read of the board.
CACHE = 1.0

BOARD = Schema(
    name="model_cooldowns",
    noun="model_cooldown",
    what="the shared model cooldowns",
    migrations=(
        """
CREATE TABLE {p}model_cooldowns (
    key text PRIMARY KEY,
    alias text NOT NULL,
    until {real} NOT NULL,
    length {real} NOT NULL,
    reason text NOT NULL,
    rate_limited boolean NOT NULL,
    probe_until {real}
);
""",
    ),
    rebuild="",
    reopen="heron.llm.board.open_board(settings)",
    advice="then retry",
)


@dataclass(frozen=True)
class Cooled:
    """A model cooled on some replica: until when (Unix time), why, and how long its
    cooldowns last (what an unanswered probe starts again)."""

    until: float
    length: float
    reason: str
    rate_limited: bool
    probe_until: float | None


class Board:
    """The cooled models of every replica, with a short local cache."""

    def __init__(self, database: Database, clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self._clock = clock
        self._lock = threading.Lock()
        self._rows: dict[str, Cooled] = {}
        self._read_at = float("-inf")

    def seen(self, key: str) -> Cooled | None:
        """``key``'s record as last read (read again when over ``CACHE`` seconds old)."""
        now = self._clock()
        with self._lock:
            fresh = now - self._read_at < CACHE
        if not fresh:
            try:
                with self.database.connection() as db:
                    rows = db.execute("SELECT * FROM heron_model_cooldowns").fetchall()
            except HeronError as exc:
                log.warning("shared cooldowns not read: %s", exc)
                rows = None
            with self._lock:
                if rows is not None:
                    self._rows = {r["key"]: _cooled(r) for r in rows}
                self._read_at = now
        with self._lock:
            return self._rows.get(key)

    def claim(self, key: str, deadline: float | None) -> Cooled | None:
        """Claim ``key``'s one probe: ``None`` when this replica probes (no one else
        does, its cooldown is over, or it has no record any more), else its record now
        (cooling, or another's probe under way). A probe past its deadline failed: the
        model cools again from it."""
        now = self._clock()
        try:
            with self.database.connection(write=True) as db:
                row = db.execute(
                    "SELECT * FROM heron_model_cooldowns WHERE key = %s FOR UPDATE", (key,)
                ).fetchone()
                if row is None:
                    return None
                cooled = _cooled(row)
                if cooled.probe_until is not None and now >= cooled.probe_until:
                    until = cooled.probe_until + cooled.length
                    db.execute(
                        "UPDATE heron_model_cooldowns SET until = %s, probe_until = NULL, "
                        "reason = 'its probe did not answer in time' WHERE key = %s",
                        (until, key),
                    )
                    return Cooled(until, cooled.length, row["reason"], cooled.rate_limited, None)
                if now < cooled.until or cooled.probe_until is not None:
                    return cooled
                probe_until = now + (deadline or cooled.length)
                db.execute(
                    "UPDATE heron_model_cooldowns SET probe_until = %s WHERE key = %s",
                    (probe_until, key),
                )
                return None
        except HeronError as exc:
            log.warning("shared cooldown of %s not claimed: %s", key, exc)
            return None

    def cool(self, key: str, alias: str, seconds: float, reason: str, rate_limited: bool) -> None:
        """``key``'s model cooled here for ``seconds``: every replica skips it."""
        until = self._clock() + seconds
        self._write(
            "INSERT INTO heron_model_cooldowns "
            "(key, alias, until, length, reason, rate_limited, probe_until) "
            "VALUES (%s, %s, %s, %s, %s, %s, NULL) ON CONFLICT (key) DO UPDATE SET "
            "until = GREATEST(heron_model_cooldowns.until, excluded.until), "
            "length = excluded.length, reason = excluded.reason, "
            "rate_limited = excluded.rate_limited, probe_until = NULL",
            (key, alias, until, seconds, reason, rate_limited),
        )
        with self._lock:
            self._rows[key] = Cooled(until, seconds, reason, rate_limited, None)

    def clear(self, key: str) -> None:
        """``key``'s model answered: healthy for every replica."""
        self._write("DELETE FROM heron_model_cooldowns WHERE key = %s", (key,))
        with self._lock:
            self._rows.pop(key, None)

    def release(self, key: str) -> None:
        """A probe that told nothing: the next request, anywhere, probes again."""
        self._write("UPDATE heron_model_cooldowns SET probe_until = NULL WHERE key = %s", (key,))

    def _write(self, sql: str, args: tuple[object, ...]) -> None:
        try:
            with self.database.connection(write=True) as db:
                db.execute(sql, args)
        except HeronError as exc:
            log.warning("shared cooldowns not written: %s", exc)

    def close(self) -> None:
        self.database.close()


def _cooled(row: dict[str, object]) -> Cooled:
    probe = row["probe_until"]
    return Cooled(
        float(row["until"]),  # type: ignore[arg-type]
        float(row["length"]),  # type: ignore[arg-type]
        str(row["reason"]),
        bool(row["rate_limited"]),
        None if probe is None else float(probe),  # type: ignore[arg-type]
    )


_boards: dict[str, Board] = {}
_opening = threading.Lock()


def open_board(settings: Settings) -> Board | None:
    """The process's board on ``HERON_DATABASE_URL``'s PostgreSQL, opened once; ``None``
    on SQLite (one machine: the process's record is the whole story)."""
    url = settings.postgres_url
    if not url:
        return None
    with _opening:
        if url not in _boards:
            _boards[url] = Board(open_database(settings, BOARD))
        return _boards[url]
