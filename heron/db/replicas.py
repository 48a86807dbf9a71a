"""Who shares the database: the replicas of one PostgreSQL (``heron_replicas``), and what
each keeps to itself.

Each ``heron serve`` on PostgreSQL writes its row when it starts and again every
``BEAT`` seconds (``heron.server.features.ops``' lifespan), and deletes it when it stops; a row
not written for ``LIVE`` seconds is a replica that died (its jobs are another matter:
``heron.jobs.runner`` takes them over by their own heartbeats). ``heron doctor`` and
``/ready`` list the live ones, each with its Heron version: replicas of two versions
side by side are told apart there (an older one whose schemas the newer one migrated
past refuses to start, naming the version: ``heron.db.postgres.migrate``).

``NOT_SHARED`` is what stays on each replica, and why: the doctor and ``/ready`` say it,
and docs/postgres.md.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from heron import __version__
from heron.db import Database, Schema, open_database
from heron.resource import Resource
from heron.settings import Settings

#: Seconds between a replica's rows, and after which a silent one counts as gone.
BEAT = 5.0
LIVE = 3 * BEAT

REPLICAS = Schema(
    name="replicas",
    noun="replica",
    what="the replica registry",
    migrations=(
        """
CREATE TABLE {p}replicas (
    id text PRIMARY KEY,
    name text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    started_at {real} NOT NULL,
    seen_at {real} NOT NULL
);
""",
    ),
    rebuild="",
    reopen="heron.db.replicas.open_registry(settings)",
    advice="then run heron doctor",
)

#: What each replica keeps to itself on PostgreSQL, and why (``heron doctor``, ``/ready``).
NOT_SHARED: dict[str, str] = {
    "library clones": "each replica clones a git library it lacks under $HERON_HOME/libraries "
    "when it indexes it; searches need none (the records are in the database)",
    "model files": "HERON_MODELS_DIR on each host: weights are read from local disk",
    "embedding cache": "a cache of vectors by text, per home: a miss is recomputed, never wrong",
    "MCP servers": "each home's mcp.json starts its own: give every replica the same one (the "
    "tools' learned examples are shared)",
    "skills usage log": "per home: what the skills served here, for the operator of this host",
    "response cache": "in memory per process (heron.llm.cache): a miss calls the model",
    "model failure counts": "per replica; what they decide (a cooldown, its probe) is shared",
    "metrics": "/metrics is each replica's own: scrape every replica",
    "keys' monthly usage": "shared, as of each replica's last write (HERON_KEYS_FLUSH seconds)",
}


@dataclass(frozen=True)
class Me:
    """This server, as its row says it: ``id`` its own, ``name`` its ``HERON_REPLICA``."""

    id: str
    name: str


class Registry(Resource):
    """The replicas of one database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def beat(self, me: Me, started_at: float) -> None:
        """Write (or write again) this replica's row."""
        now = time.time()
        with self.database.connection(write=True) as db:
            db.execute(
                "INSERT INTO heron_replicas "
                "(id, name, host, pid, version, started_at, seen_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
                (
                    me.id,
                    me.name,
                    socket.gethostname(),
                    os.getpid(),
                    __version__,
                    started_at,
                    now,
                ),
            )
            # The rows of replicas gone for a day go: the list stays the live ones'.
            db.execute("DELETE FROM heron_replicas WHERE seen_at < %s", (now - 86_400,))

    def leave(self, me: Me) -> None:
        with self.database.connection(write=True) as db:
            db.execute("DELETE FROM heron_replicas WHERE id = %s", (me.id,))

    def live(self) -> list[dict[str, Any]]:
        """The replicas heard from in the last ``LIVE`` seconds, the oldest first:
        ``name``, ``host``, ``pid``, ``version``, ``started_at``,
        ``seconds_since`` (their last row)."""
        now = time.time()
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT name, host, pid, version, started_at, seen_at "
                "FROM heron_replicas WHERE seen_at >= %s ORDER BY started_at, id",
                (now - LIVE,),
            ).fetchall()
        return [
            {k: row[k] for k in ("name", "host", "pid", "version", "started_at")}
            | {"seconds_since": round(now - row["seen_at"], 1)}
            for row in rows
        ]

    def close(self) -> None:
        self.database.close()


def open_registry(settings: Settings) -> Registry | None:
    """The registry of ``HERON_DATABASE_URL``'s PostgreSQL; ``None`` on SQLite (one
    machine: there is no other replica)."""
    if not settings.postgres_url:
        return None
    return Registry(open_database(settings, REPLICAS))
