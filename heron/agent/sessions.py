"""Conversations by ``session_id``, in SQLite at ``$HERON_HOME/agent.db``.

A turn (the message and its whole answer) is written in one transaction once the answer
is complete: a failed answer leaves the session as it was. What is written is redacted
first (``heron.redact``): a password pasted into a chat must not outlive the request in
``agent.db``. The turn being answered keeps the original; history replays the redacted
text.

A ``Sessions`` is one context's view of the file (``heron.core.contexts``): it lists,
reads, continues and deletes only the sessions started in its context; another
context's session id is ``NotFound`` there, as one that never was.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from heron.core.chat import Message
from heron.core.contexts import DEFAULT
from heron.db import Schema, SQLiteDatabase
from heron.errors import InputError, NotFound
from heron.redact import redact, redact_value
from heron.resource import Resource

#: ``{new}`` (``IF NOT EXISTS``) adopts a file written before its schema was numbered,
#: whichever of the three tables it already has.
_SESSIONS = Schema(
    name="agent",
    what="the session database",
    migrations=(
        """
CREATE TABLE {new}sessions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE {new}turns (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    answer TEXT NOT NULL,
    record TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE {new}titles (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    title TEXT NOT NULL
);
""",
        # The context a session was started in (heron.core.contexts): only it sees it.
        "ALTER TABLE sessions ADD COLUMN context TEXT NOT NULL DEFAULT 'default';",
    ),
    rebuild="a new one starts on the next use",
    reopen="heron.agent.open_agent(settings)",
)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
#: Earlier turns replayed to the model; older ones stay stored but unsent.
HISTORY_TURNS = 8


def check_session_id(session_id: str) -> str:
    if not _ID.match(session_id):
        raise InputError(
            f"Invalid session id {session_id!r}: use up to 128 letters, digits, '_', '-', "
            "'.' or ':', starting with a letter or digit; or omit it to start a new session."
        )
    return session_id


def new_session_id() -> str:
    return uuid.uuid4().hex


class Sessions(Resource):
    """The session file, safe to share between threads (``heron.db.SQLiteDatabase``);
    every use of it raises a damaged, read-only or locked file as one ``StoreError``
    naming the file and the fix (``heron.db.sqlite``)."""

    def __init__(self, path: Path, context: str = DEFAULT) -> None:
        self.context = context
        # ON DELETE CASCADE needs foreign_keys; the default synchronous=FULL stays: a
        # turn answered is a turn kept, even through a power cut.
        self._db = SQLiteDatabase(path, _SESSIONS, pragmas=("foreign_keys=ON",), rows=None)

    def history(self, session_id: str, turns: int = HISTORY_TURNS) -> list[Message]:
        """The last ``turns`` exchanges as user and assistant messages, oldest first."""
        with self._db.connection() as db:
            self._check(db, session_id)
            rows = db.execute(
                "SELECT message, answer FROM turns WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, turns),
            ).fetchall()
        messages: list[Message] = []
        for message, answer in reversed(rows):
            messages += [Message("user", message), Message("assistant", answer)]
        return messages

    def save(self, session_id: str, message: str, record: dict[str, Any]) -> int:
        """Append one turn (``record``: the answer's ``to_dict()``), redacted; returns its
        number."""
        now = time.time()
        message, record = redact(message), redact_value(record)
        with self._db.connection(write=True) as db:
            self._check(db, session_id)
            db.execute(
                "INSERT INTO sessions (id, created, updated, context) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET updated = excluded.updated",
                (session_id, now, now, self.context),
            )
            (seq,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            db.execute(
                "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    seq,
                    message,
                    record["answer"],
                    json.dumps(record, ensure_ascii=False),
                    now,
                ),
            )
        return int(seq)

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        """Every stored turn of a session, oldest first: ``{"seq", "message", "answer"}``
        with the answer as ``Answer.to_dict()`` gave it."""
        with self._db.connection() as db:
            self._check(db, session_id)
            rows = db.execute(
                "SELECT seq, message, record FROM turns WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [{"seq": s, "message": m, "answer": json.loads(r)} for s, m, r in rows]

    def recent(self, limit: int = 200) -> list[dict[str, Any]]:
        """Sessions, the latest first: ``{"id", "title", "created", "updated", "turns"}``;
        ``title`` is the one given (``rename``), else the first question."""
        with self._db.connection() as db:
            rows = db.execute(
                "SELECT s.id, s.created, s.updated, t.title,"
                " (SELECT message FROM turns WHERE session_id = s.id ORDER BY seq LIMIT 1),"
                " (SELECT COUNT(*) FROM turns WHERE session_id = s.id)"
                " FROM sessions s LEFT JOIN titles t ON t.session_id = s.id"
                " WHERE s.context = ? ORDER BY s.updated DESC LIMIT ?",
                (self.context, limit),
            ).fetchall()
        return [
            {"id": sid, "title": title or first or "", "created": c, "updated": u, "turns": n}
            for sid, c, u, title, first, n in rows
        ]

    def rename(self, session_id: str, title: str) -> None:
        """Give a session a title (``""``: back to its first question)."""
        with self._db.connection(write=True) as db:
            found = db.execute(
                "SELECT 1 FROM sessions WHERE id = ? AND context = ?", (session_id, self.context)
            ).fetchone()
            if found is None:
                raise NotFound(f"No session {session_id!r}; sessions.list names them.")
            if title.strip():
                db.execute(
                    "INSERT INTO titles VALUES (?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET title = excluded.title",
                    (session_id, redact(title.strip())),
                )
            else:
                db.execute("DELETE FROM titles WHERE session_id = ?", (session_id,))

    def delete(self, session_id: str) -> bool:
        """Forget a session and its turns; ``False`` when there was none."""
        with self._db.connection(write=True) as db:
            gone = db.execute(
                "DELETE FROM sessions WHERE id = ? AND context = ?", (session_id, self.context)
            ).rowcount
        return bool(gone)

    def amend(self, session_id: str, answer: str, extra: dict[str, Any]) -> None:
        """Add ``extra``'s keys, redacted, to the record of the session's latest turn
        whose answer is ``answer``: what its stream knew and the answer does not say
        (the generated text a fallback replaced)."""
        with self._db.connection(write=True) as db:
            self._check(db, session_id)
            row = db.execute(
                "SELECT seq, record FROM turns WHERE session_id = ? AND answer = ? "
                "ORDER BY seq DESC LIMIT 1",
                (session_id, redact(answer)),
            ).fetchone()
            if row is not None:
                record = json.loads(row[1]) | redact_value(extra)
                db.execute(
                    "UPDATE turns SET record = ? WHERE session_id = ? AND seq = ?",
                    (json.dumps(record, ensure_ascii=False), session_id, row[0]),
                )

    def _check(self, db: Any, session_id: str) -> None:
        """``NotFound`` when ``session_id`` is another context's: to this one it does not
        exist, and it cannot be read, continued or reused under its id either."""
        row = db.execute("SELECT context FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is not None and row[0] != self.context:
            raise NotFound(f"No session {session_id!r}; sessions.list names them.")

    def close(self) -> None:
        self._db.close()
