"""Chat stream events in PostgreSQL, so that any replica resumes a ``/chat/stream``.

The replica that answers keeps its stream in memory (``heron.server.doors.sse``) and, when
``HERON_DATABASE_URL`` is PostgreSQL, copies its events to ``heron_chat_events`` as they
come: a writer task per stream writes what is new at most every ``FLUSH`` seconds, one
transaction a batch, so tokens are not a round trip each. A client that reconnects to
another replica (behind a load balancer, or after the first one died) with
``Last-Event-ID: <stream>:<n>`` gets the events after ``n`` from there: a follower that
reads the table every ``POLL`` seconds until the stream's last event. The stream's owner
(the key's name and the context, ``heron_chat_streams``) is checked there as on the
replica that started it: to anyone else the id is unknown. A finished stream's rows are
dropped ``server_stream_ttl`` seconds after its end, by whichever replica starts a stream
next. On SQLite (one machine) none of this exists: the hub's memory is the whole story.

A stream whose replica died before its last event stays unfinished in the table; a
follower elsewhere stops after ``server_stream_grace`` seconds without a new event and
ends it with ``error`` (the answer cannot go on without its replica).
"""

from __future__ import annotations

import json
import time
from typing import Any

from heron.db import Database, Schema, open_database
from heron.settings import Settings

#: The most seconds between a stream's event and its row; the follower's read interval.
FLUSH = 0.1
POLL = 0.2

STREAMS = Schema(
    name="chat_streams",
    noun="chat_stream",
    what="the chat streams' events",
    migrations=(
        """
CREATE TABLE {p}chat_streams (
    id text PRIMARY KEY,
    owner text,
    context text NOT NULL,
    started_at {real} NOT NULL,
    finished_at {real}
);
CREATE INDEX {p}chat_streams_finished ON {p}chat_streams (finished_at);
CREATE TABLE {p}chat_events (
    stream_id text NOT NULL REFERENCES {p}chat_streams (id) ON DELETE CASCADE,
    seq integer NOT NULL,
    name text NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (stream_id, seq)
);
""",
    ),
    rebuild="",
    reopen="heron.server.http.relay.open_relay(settings)",
    advice="then start the answer again (POST /chat/stream)",
)
#: A stream's owner: the name of the key that started it (``None``: no key) and its
#: context (``heron.server.doors.sse.Owner``).
Owner = tuple[str | None, str]
Event = tuple[str, dict[str, Any]]


class Relay:
    """The chat streams of every replica on one PostgreSQL database."""

    def __init__(self, database: Database, ttl: float) -> None:
        self.database = database
        self.ttl = ttl

    def start(self, stream_id: str, owner: Owner) -> None:
        """Record a new stream of ``owner``; drop the rows of those finished over
        ``ttl`` seconds ago."""
        now = time.time()
        with self.database.connection(write=True) as db:
            db.execute("DELETE FROM heron_chat_streams WHERE finished_at < %s", (now - self.ttl,))
            db.execute(
                "INSERT INTO heron_chat_streams (id, owner, context, started_at) "
                "VALUES (%s, %s, %s, %s)",
                (stream_id, owner[0], owner[1], now),
            )

    def write(self, stream_id: str, first: int, events: list[Event], finished: bool) -> None:
        """Events numbered ``first``, ``first + 1`` ... of the stream; ``finished``: the
        last of them ends it. Idempotent (a batch written twice lands once)."""
        with self.database.connection(write=True) as db:
            cursor = db.cursor()
            cursor.executemany(
                "INSERT INTO heron_chat_events (stream_id, seq, name, data) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [
                    (stream_id, first + i, name, json.dumps(data, ensure_ascii=False))
                    for i, (name, data) in enumerate(events)
                ],
            )
            if finished:
                db.execute(
                    "UPDATE heron_chat_streams SET finished_at = %s WHERE id = %s",
                    (time.time(), stream_id),
                )

    def read(self, stream_id: str, owner: Owner, after: int) -> tuple[list[Event], bool] | None:
        """The events numbered above ``after``, and whether the stream has ended;
        ``None`` when no stream of ``owner`` has that id (another's is as unknown as
        one never started)."""
        with self.database.connection() as db:
            row = db.execute(
                "SELECT owner, context, finished_at FROM heron_chat_streams WHERE id = %s",
                (stream_id,),
            ).fetchone()
            if row is None or (row["owner"], row["context"]) != owner:
                return None
            rows = db.execute(
                "SELECT name, data FROM heron_chat_events WHERE stream_id = %s AND seq > %s "
                "ORDER BY seq",
                (stream_id, after),
            ).fetchall()
        return [(r["name"], json.loads(r["data"])) for r in rows], row["finished_at"] is not None

    def close(self) -> None:
        self.database.close()


def open_relay(settings: Settings) -> Relay | None:
    """The relay of ``HERON_DATABASE_URL``'s PostgreSQL; ``None`` on SQLite."""
    if not settings.postgres_url:
        return None
    return Relay(open_database(settings, STREAMS), settings.server.stream_ttl)
