"""Conversations by ``session_id``, in SQLite at ``$HERON_HOME/agent.db``.

A turn (the message and its whole answer) is written in one transaction once the answer
is complete: a failed answer leaves the session as it was. What is written is redacted
first (``heron.redact``): a password pasted into a chat must not outlive the request in
``agent.db``. The turn being answered keeps the original; history replays the redacted
text.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from heron.errors import InputError, StoreError
from heron.llm.types import Message
from heron.private import private_dir, private_file
from heron.redact import redact, redact_value

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    answer TEXT NOT NULL,
    record TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""
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


class Sessions:
    def __init__(self, path: Path) -> None:
        try:
            private_file(private_dir(path.parent) / path.name)
            self._db = sqlite3.connect(
                path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"Cannot open the session database {path}: {exc}") from exc
        self._lock = threading.Lock()

    def history(self, session_id: str, turns: int = HISTORY_TURNS) -> list[Message]:
        """The last ``turns`` exchanges as user and assistant messages, oldest first."""
        with self._lock:
            rows = self._db.execute(
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
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT INTO sessions VALUES (?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET updated = excluded.updated",
                    (session_id, now, now),
                )
                (seq,) = self._db.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
                self._db.execute(
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
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"Cannot save the turn of session {session_id!r}: {exc}") from exc
        return int(seq)

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        """Every stored turn of a session, oldest first: ``{"seq", "message", "answer"}``
        with the answer as ``Answer.to_dict()`` gave it."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, message, record FROM turns WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [{"seq": s, "message": m, "answer": json.loads(r)} for s, m, r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
