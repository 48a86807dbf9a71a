"""Where a key's rate windows are counted: in this process, or in PostgreSQL for replicas.

``heron.server.features.keys.Keyring`` asks two things of its windows, whichever keeps them:

- ``hit(name, limit, now)``: count one request of key ``name`` if fewer than ``limit``
  were counted in the last ``window`` seconds (a moving window, exact at its edges), else
  say when the oldest of them leaves it (``peek``: the same, counting nothing);
- ``tokens(name, now)``: the key's tokens of the window ``now`` falls in (spent, and held
  by requests under way), changed inside the block under the key's lock, and kept.

``MemoryWindows`` (one machine, SQLite) is what the keyring always had: the ``limits``
library's moving window and a dict, nothing written anywhere, no slower. When
``HERON_DATABASE_URL`` is PostgreSQL, replicas behind a load balancer share one key, so
``DatabaseWindows`` counts in the database (``heron_key_hits``, ``heron_key_tokens``):
otherwise a key allowed 5 requests a minute is allowed 5 per replica (LiteLLM's proxy
documents the same of its workers without Redis), and a client refused sign-ins on one
replica tries again on the next (the credential throttle, ``heron.server.http.auth.Throttle``,
counts its failures here too, as ``signin:ADDRESS``). Each call is one transaction under the
key's advisory lock, so two replicas checking one key take turns. Token windows are
aligned to the clock there (``floor(now / window)``), so every replica counts the same
one; each replica writes its own row of a key (what it spent this window, what its
requests hold), and a check sums them. A replica's holds count while it touched the key
in the last ``HOLD_TTL`` seconds: one that died holding tokens gives them back then.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from heron.db import Database, Schema, open_database
from heron.settings import Settings

#: Seconds a replica's holds count without it touching the key again: longer than any
#: answer runs, so a live replica's long stream keeps its hold.
HOLD_TTL = 900.0

WINDOWS = Schema(
    name="key_windows",
    noun="key_window",
    what="the keys' rate windows",
    migrations=(
        """
CREATE TABLE {p}key_hits (
    name text NOT NULL,
    at {real} NOT NULL
);
CREATE INDEX {p}key_hits_by_name ON {p}key_hits (name, at);
CREATE TABLE {p}key_tokens (
    name text NOT NULL,
    replica text NOT NULL,
    start {real} NOT NULL,
    spent bigint NOT NULL,
    held bigint NOT NULL,
    seen {real} NOT NULL,
    PRIMARY KEY (name, replica)
);
""",
    ),
    rebuild="",
    reopen="heron.server.http.windows.open_windows(settings)",
    advice="then retry the request",
)


@dataclass
class Tokens:
    """One key's tokens in its window (from ``start``): spent, and held by requests
    under way (every replica's, in the database)."""

    start: float
    spent: int = 0
    held: int = 0


class Windows(Protocol):
    window: float

    def hit(self, name: str, limit: int, now: float) -> float | None:
        """Count one request of key ``name``, or (counting nothing) return when the
        window has room again, as Unix time, if ``limit`` are counted in it."""
        ...

    def peek(self, name: str, limit: int, now: float) -> float | None:
        """``hit``'s answer, counting nothing."""
        ...

    def tokens(self, name: str, now: float) -> AbstractContextManager[Tokens]:
        """Key ``name``'s tokens in the window of ``now``, under the key's lock; what the
        block changes of them is kept."""
        ...

    def close(self) -> None: ...


class MemoryWindows:
    """One process's windows: the ``limits`` library's moving window for requests (its
    moving window is exact at the edges), a window per key from its first use for
    tokens, which ``limits`` has no notion of holding."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._requests = MovingWindowRateLimiter(MemoryStorage())
        self._tokens: dict[str, Tokens] = {}
        self._lock = threading.Lock()

    def hit(self, name: str, limit: int, now: float) -> float | None:
        item = RateLimitItemPerSecond(limit, int(self.window))
        if self._requests.hit(item, "rpm", name):
            return None
        return float(self._requests.get_window_stats(item, "rpm", name)[0])

    def peek(self, name: str, limit: int, now: float) -> float | None:
        item = RateLimitItemPerSecond(limit, int(self.window))
        if self._requests.test(item, "rpm", name):
            return None
        return float(self._requests.get_window_stats(item, "rpm", name)[0])

    @contextmanager
    def tokens(self, name: str, now: float) -> Iterator[Tokens]:
        with self._lock:
            tokens = self._tokens.get(name)
            if tokens is None or now - tokens.start >= self.window:
                # A new window starts with nothing spent, and what is held still held.
                tokens = self._tokens[name] = Tokens(now, held=tokens.held if tokens else 0)
            yield tokens

    def close(self) -> None:
        pass


class DatabaseWindows:
    """Every replica's windows, in PostgreSQL (module docstring). ``replica``: this
    server's row of each key's tokens."""

    def __init__(self, database: Database, window: float, replica: str) -> None:
        self.database = database
        self.window = window
        self.replica = replica

    @contextmanager
    def _locked(self, name: str) -> Iterator[Any]:
        with self.database.connection(write=True) as db:
            db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"heron-key:{name}",))
            yield db

    def hit(self, name: str, limit: int, now: float) -> float | None:
        return self._hit(name, limit, now, count=True)

    def peek(self, name: str, limit: int, now: float) -> float | None:
        return self._hit(name, limit, now, count=False)

    def _hit(self, name: str, limit: int, now: float, *, count: bool) -> float | None:
        with self._locked(name) as db:
            db.execute(
                "DELETE FROM heron_key_hits WHERE name = %s AND at <= %s",
                (name, now - self.window),
            )
            row = db.execute(
                "SELECT count(*) AS n, min(at) AS oldest FROM heron_key_hits WHERE name = %s",
                (name,),
            ).fetchone()
            if row["n"] >= limit:
                return float(row["oldest"]) + self.window
            if not count:
                return None
            db.execute("INSERT INTO heron_key_hits (name, at) VALUES (%s, %s)", (name, now))
            return None

    @contextmanager
    def tokens(self, name: str, now: float) -> Iterator[Tokens]:
        start = now - now % self.window
        with self._locked(name) as db:
            rows = db.execute(
                "SELECT replica, start, spent, held, seen FROM heron_key_tokens WHERE name = %s",
                (name,),
            ).fetchall()
            spent = sum(int(r["spent"]) for r in rows if r["start"] == start)
            held = sum(int(r["held"]) for r in rows if r["seen"] > now - HOLD_TTL)
            mine = next((r for r in rows if r["replica"] == self.replica), None)
            view = Tokens(start, spent, held)
            yield view
            own_spent = int(mine["spent"]) if mine is not None and mine["start"] == start else 0
            own_held = int(mine["held"]) if mine is not None else 0
            db.execute(
                "INSERT INTO heron_key_tokens (name, replica, start, spent, held, seen) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name, replica) DO UPDATE SET "
                "start = excluded.start, spent = excluded.spent, held = excluded.held, "
                "seen = excluded.seen",
                (
                    name,
                    self.replica,
                    start,
                    own_spent + view.spent - spent,
                    max(0, own_held + view.held - held),
                    now,
                ),
            )

    def close(self) -> None:
        self.database.close()


def open_windows(settings: Settings, window: float | None = None) -> Windows:
    """Windows of ``window`` seconds (default ``keys_window``): the database's when
    ``HERON_DATABASE_URL`` is PostgreSQL, else this process's."""
    seconds = settings.server.keys_window if window is None else window
    if settings.postgres_url:
        return DatabaseWindows(open_database(settings, WINDOWS), seconds, settings.replica)
    return MemoryWindows(seconds)
