"""The web page's sign-ins in PostgreSQL, so that a browser signed in on one replica is
signed in on every replica behind the load balancer, and signed out of all at once.

``heron.server.http.auth.Sessions`` keeps each session's id hashed with its expiry. On one
machine that record is in memory (a restart signs everyone out, as before). With
``HERON_DATABASE_URL`` on PostgreSQL it is also a row of ``heron_signins`` (the hash and
the expiry, never the id): a replica that does not know a cookie's session looks it up
there, and one that knows it looks again every ``RECHECK`` seconds, so a sign-out on one
replica ends the session on the others within that time. The cookie is signed with the
server's token (the same ``HERON_API_TOKEN`` on every replica), as on one machine.
"""

from __future__ import annotations

import time

from heron.db import Database, Schema, open_database
from heron.resource import Resource
from heron.settings import Settings

#: Seconds a replica trusts what it knows of a session before it asks the database again.
RECHECK = 5.0

SIGNINS = Schema(
    name="signins",
    noun="signin",
    what="the web page's sign-ins",
    migrations=(
        """
CREATE TABLE {p}signins (
    hash text PRIMARY KEY,
    expires_at {real} NOT NULL
);
CREATE INDEX {p}signins_expiry ON {p}signins (expires_at);
""",
        # The named key a person signed in with (NULL: the server's token).
        "ALTER TABLE {p}signins ADD COLUMN key text;",
    ),
    rebuild="",
    reopen="heron.server.http.signins.open_signins(settings)",
    advice="then sign in again",
)


class SignIns(Resource):
    """Every replica's live sign-ins: hashes of session ids and their expiry (Unix time)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def add(self, digest: str, expires_at: float, key: str | None) -> None:
        with self.database.connection(write=True) as db:
            db.execute("DELETE FROM heron_signins WHERE expires_at < %s", (time.time(),))
            db.execute(
                "INSERT INTO heron_signins (hash, expires_at, key) VALUES (%s, %s, %s) "
                "ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at",
                (digest, expires_at, key),
            )

    def find(self, digest: str) -> tuple[float, str | None] | None:
        """When the session ``digest`` ends (Unix time) and the key it was signed in with;
        ``None`` if it is not live."""
        with self.database.connection() as db:
            row = db.execute(
                "SELECT expires_at, key FROM heron_signins WHERE hash = %s", (digest,)
            ).fetchone()
        return None if row is None else (float(row["expires_at"]), row["key"])

    def remove(self, digest: str) -> None:
        with self.database.connection(write=True) as db:
            db.execute("DELETE FROM heron_signins WHERE hash = %s", (digest,))

    def close(self) -> None:
        self.database.close()


def open_signins(settings: Settings) -> SignIns | None:
    """The sign-ins of ``HERON_DATABASE_URL``'s PostgreSQL; ``None`` on SQLite."""
    if not settings.postgres_url:
        return None
    return SignIns(open_database(settings, SIGNINS))
