"""Conversations by ``session_id``: in SQLite at ``$HERON_HOME/agent.db``, or in the
PostgreSQL database ``HERON_DATABASE_URL`` names (``heron_sessions``, ``heron_turns``,
``heron_titles``), where every replica of a team's deployment reads and continues every
conversation: one started on one replica goes on on another, and an id names one
conversation across them all (``open_sessions``). The SQL is written once for both.

A turn (the message and its whole answer) is written in one transaction once the answer
is complete: a failed answer leaves the session as it was. What is written is redacted
first (``heron.redact``): a password pasted into a chat must not outlive the request in
``agent.db``. The turn being answered keeps the original; history replays the redacted
text.

A ``Sessions`` is one context's view of the file (``heron.core.contexts``): it lists,
reads, continues and deletes only the sessions started in its context; another
context's session id is ``NotFound`` there, as one that never was.

**Who and where.** Each session records who started it (``owner``: the name of the key
a server knew the caller by, ``""`` for the machine's own user) and through which door
(``door``: ``page``, ``cli`` or ``api``), once, when it is made. An ``Asker`` (who asks
now) reads, continues, renames and deletes only its own sessions, unless it is an admin,
who may act on every session of the context; sessions written before owners were kept
(``owner`` unknown, ``NULL``) are an admin's alone. ``recent`` lists the asker's own
(the page asks for its door only); an admin may ask for everyone's. A call that names
no asker (the agent's own ``save``, ``history`` and ``turns``) asks ``current_asker()``:
the machine's user at the CLI, the request's key in a server (``use_asker``).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.core.chat import Message
from heron.core.contexts import DEFAULT
from heron.db import Database, DatabaseStore, EngineSchemas, Schema, SQLiteDatabase, open_database
from heron.errors import InputError, NotFound
from heron.redact import redact, redact_value
from heron.settings import Settings

#: ``{new}`` (``IF NOT EXISTS``) adopts a file written before its schema was numbered,
#: whichever of the three tables it already has.
#: In ``heron.db.dialect``'s notation; on SQLite the words render as they were first
#: written (``REAL``, no prefix), so files of every earlier version migrate as before.
SESSIONS = Schema(
    name="agent",
    noun="session",
    what="the session database",
    migrations=(
        """
CREATE TABLE {new}{p}sessions (
    id TEXT PRIMARY KEY,
    created {real} NOT NULL,
    updated {real} NOT NULL
);
CREATE TABLE {new}{p}turns (
    session_id TEXT NOT NULL REFERENCES {p}sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    answer TEXT NOT NULL,
    record TEXT NOT NULL,
    created {real} NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE {new}{p}titles (
    session_id TEXT PRIMARY KEY REFERENCES {p}sessions(id) ON DELETE CASCADE,
    title TEXT NOT NULL
);
""",
        # The context a session was started in (heron.core.contexts): only it sees it.
        "ALTER TABLE {p}sessions ADD COLUMN context TEXT NOT NULL DEFAULT 'default';",
        # Who started it and through which door (Asker); NULL for the sessions already
        # there, whose owner nobody recorded: only an admin sees those. The index serves
        # a person's list, the latest first.
        """
ALTER TABLE {p}sessions ADD COLUMN owner TEXT;
ALTER TABLE {p}sessions ADD COLUMN door TEXT;
CREATE INDEX {p}sessions_by_owner ON {p}sessions (context, owner, updated);
""",
    ),
    rebuild="a new one starts on the next use",
    reopen="heron.wiring.open_agent(settings)",
    advice="then the conversation (sessions.list) before asking again",
)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
#: Earlier turns replayed to the model; older ones stay stored but unsent.
HISTORY_TURNS = 8
#: Where a session was started: the web page's chat, the CLI, or any other door of a
#: server (JSON-RPC, ``/v1``, MCP, ``/chat/stream`` without the page).
Door = Literal["page", "cli", "api"]
#: Sessions made but never asked in (``create``) are kept this long, then dropped when
#: their owner makes another: a page that failed its first answer leaves no litter.
EMPTY_TTL = 86_400.0


@dataclass(frozen=True)
class Asker:
    """Who asks, and through which door.

    ``owner``: the name of the key a server knew the caller by (``HERON_API_TOKEN`` for
    the server's token and for the page signed in with it, a named key's name), or
    ``""`` for the machine's own user: the CLI, and a loopback server without a token,
    where every caller may do everything. Key names are never reused (a revoked key keeps
    its name), so an owner is one key for good. ``admin``: may read, continue, rename,
    delete and list every session of the context, those of unknown owner too.

    >>> Asker("ci-bot", "api", admin=False).owner
    'ci-bot'
    """

    owner: str
    door: Door
    admin: bool = False  # secure by default: an asker sees its own


#: The machine's user at the CLI: trusted with everything (docs/security.md).
LOCAL = Asker("", "cli", admin=True)


def _local() -> Asker:
    return LOCAL


_asker: Callable[[], Asker] = _local


def use_asker(resolver: Callable[[], Asker]) -> None:
    """Tell this process how to learn who asks, for the calls that do not say (the
    agent's own ``save``, ``history`` and ``turns``). A server installs one that reads
    the request's key (``heron.server.features.conversations``); without one it is ``LOCAL``."""
    global _asker
    _asker = resolver


def current_asker() -> Asker:
    return _asker()


def check_session_id(session_id: str) -> str:
    if not _ID.match(session_id):
        raise InputError(
            f"Invalid session id {session_id!r}: use up to 128 letters, digits, '_', '-', "
            "'.' or ':', starting with a letter or digit; or omit it to start a new session."
        )
    return session_id


def new_session_id() -> str:
    return uuid.uuid4().hex


def sessions_file(path: Path) -> SQLiteDatabase:
    """The SQLite session file ``path``, as ``Sessions`` needs it."""
    # ON DELETE CASCADE needs foreign_keys; the default synchronous=FULL stays: a turn
    # answered is a turn kept, even through a power cut.
    return SQLiteDatabase(path, SESSIONS, pragmas=("foreign_keys=ON",), rows=None)


def open_sessions(settings: Settings) -> Sessions:
    """The sessions of ``settings.context``: in PostgreSQL when ``HERON_DATABASE_URL``
    names it (every replica's), else in ``$HERON_HOME/agent.db``, where they have always
    been (not beside a ``sqlite:///`` store elsewhere, which would lose them)."""
    if settings.postgres_url:
        schemas = EngineSchemas(SESSIONS, SESSIONS, postgres_options={"rows": None})
        return Sessions(open_database(settings, schemas), settings.context)
    return Sessions(sessions_file(settings.home / "agent.db"), settings.context)


class Sessions(DatabaseStore):
    """The sessions of one context on a database (``open_sessions``), safe to share
    between threads; every use of it raises a damaged, read-only or locked file, or an
    unreachable server, as one ``StoreError`` naming it and the fix (``heron.db``).

    Each call acts as ``asker`` (``current_asker()`` when it names none): a session of
    another owner, or of another context, is ``NotFound`` to it unless it is an admin
    (the module docstring). Two servers saving a turn of one session at once take turns
    on its row (the upsert of ``save`` locks it), so turns are numbered 1, 2, 3 ...
    whichever replica answers."""

    def __init__(self, database: Database, context: str = DEFAULT) -> None:
        super().__init__(database)
        self.context = context

    def history(
        self, session_id: str, turns: int = HISTORY_TURNS, *, asker: Asker | None = None
    ) -> list[Message]:
        """The last ``turns`` exchanges as user and assistant messages, oldest first."""
        exchanges = self.exchanges(session_id, turns, asker=asker)
        return [message for _, pair in exchanges for message in pair]

    def exchanges(
        self, session_id: str, turns: int = HISTORY_TURNS, *, asker: Asker | None = None
    ) -> list[tuple[float, tuple[Message, Message]]]:
        """The last ``turns`` exchanges, oldest first: when each was saved, and its user
        and assistant messages (``heron.agent.recall`` places what joined between them)."""
        with self.statements() as db:
            self._check(db, session_id, asker or current_asker())
            rows = db.execute(
                "SELECT message, answer, created FROM {p}turns WHERE session_id = ?"
                " ORDER BY seq DESC LIMIT ?",
                (session_id, turns),
            ).fetchall()
        return [
            (created, (Message("user", message), Message("assistant", answer)))
            for message, answer, created in reversed(rows)
        ]

    def create(self, asker: Asker | None = None) -> str:
        """A new, empty session of ``asker`` (its owner and door), for a client that
        names its conversation before the first question: the page, whose door the agent
        cannot tell. Returns its id. Listed once it has a turn; the owner's empty ones
        older than ``EMPTY_TTL`` go in the same transaction."""
        asker = asker or current_asker()
        session_id, now = new_session_id(), time.time()
        with self.statements(write=True) as db:
            db.execute(
                "DELETE FROM {p}sessions WHERE context = ? AND owner = ? AND created < ?"
                " AND NOT EXISTS (SELECT 1 FROM {p}turns WHERE session_id = {p}sessions.id)",
                (self.context, asker.owner, now - EMPTY_TTL),
            )
            db.execute(
                "INSERT INTO {p}sessions (id, created, updated, context, owner, door)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, now, now, self.context, asker.owner, asker.door),
            )
        return session_id

    def save(
        self,
        session_id: str,
        message: str,
        record: dict[str, Any],
        *,
        asker: Asker | None = None,
    ) -> int:
        """Append one turn (``record``: the answer's ``to_dict()``), redacted; returns its
        number. A new session is ``asker``'s, started through its door; an existing one
        keeps its owner and door, and must be the asker's (or the asker an admin)."""
        asker = asker or current_asker()
        now = time.time()
        message, record = redact(message), redact_value(record)
        with self.statements(write=True) as db:
            self._check(db, session_id, asker)
            db.execute(
                "INSERT INTO {p}sessions (id, created, updated, context, owner, door)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET updated = excluded.updated",
                (session_id, now, now, self.context, asker.owner, asker.door),
            )
            (seq,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM {p}turns WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            db.execute(
                "INSERT INTO {p}turns VALUES (?, ?, ?, ?, ?, ?)",
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

    def turns(self, session_id: str, *, asker: Asker | None = None) -> list[dict[str, Any]]:
        """Every stored turn of a session, oldest first: ``{"seq", "message", "answer"}``
        with the answer as ``Answer.to_dict()`` gave it."""
        with self.statements() as db:
            self._check(db, session_id, asker or current_asker())
            rows = db.execute(
                "SELECT seq, message, record FROM {p}turns WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [{"seq": s, "message": m, "answer": json.loads(r)} for s, m, r in rows]

    def recent(
        self,
        limit: int = 200,
        *,
        asker: Asker | None = None,
        door: Door | None = None,
        everyone: bool = False,
    ) -> list[dict[str, Any]]:
        """The asker's sessions with at least one turn, the latest first: ``{"id",
        "title", "created", "updated", "turns", "owner", "door"}``; ``title`` is the one
        given (``rename``), else the first question. ``door``: only those started there
        (the page lists ``"page"``). ``everyone``: every owner's, unknown ones included
        (``owner``, ``door``: ``None``); an admin's alone, ``InputError`` for anyone else
        (a server checks the scope first and answers 403)."""
        asker = asker or current_asker()
        if everyone and not asker.admin:
            raise InputError("Only an admin lists everyone's sessions; leave out everyone.")
        where, args = ["s.context = ?"], [self.context]
        if not everyone:
            where.append("s.owner = ?")
            args.append(asker.owner)
        if door is not None:
            where.append("s.door = ?")
            args.append(door)
        with self.statements() as db:
            rows = db.execute(
                "SELECT s.id, s.created, s.updated, s.owner, s.door, t.title,"
                " (SELECT message FROM {p}turns WHERE session_id = s.id ORDER BY seq LIMIT 1),"
                " (SELECT COUNT(*) FROM {p}turns WHERE session_id = s.id)"
                " FROM {p}sessions s LEFT JOIN {p}titles t ON t.session_id = s.id"
                f" WHERE {' AND '.join(where)}"
                " AND EXISTS (SELECT 1 FROM {p}turns WHERE session_id = s.id)"
                " ORDER BY s.updated DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
        return [
            {"id": sid, "title": title or first or "", "created": c, "updated": u, "turns": n,
             "owner": owner, "door": started}
            for sid, c, u, owner, started, title, first, n in rows
        ]  # fmt: skip

    def rename(self, session_id: str, title: str, *, asker: Asker | None = None) -> None:
        """Give a session a title (``""``: back to its first question)."""
        with self.statements(write=True) as db:
            if not self._visible(db, session_id, asker or current_asker()):
                raise NotFound(f"No session {session_id!r}; sessions.list names them.")
            if title.strip():
                db.execute(
                    "INSERT INTO {p}titles VALUES (?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET title = excluded.title",
                    (session_id, redact(title.strip())),
                )
            else:
                db.execute("DELETE FROM {p}titles WHERE session_id = ?", (session_id,))

    def delete(self, session_id: str, *, asker: Asker | None = None) -> bool:
        """Forget a session and its turns; ``False`` when the asker has none by that id."""
        with self.statements(write=True) as db:
            if not self._visible(db, session_id, asker or current_asker()):
                return False
            db.execute("DELETE FROM {p}sessions WHERE id = ?", (session_id,))
        return True

    def amend(
        self, session_id: str, answer: str, extra: dict[str, Any], *, asker: Asker | None = None
    ) -> None:
        """Add ``extra``'s keys, redacted, to the record of the session's latest turn
        whose answer is ``answer``: what its stream knew and the answer does not say
        (the generated text a fallback replaced)."""
        with self.statements(write=True) as db:
            self._check(db, session_id, asker or current_asker())
            row = db.execute(
                "SELECT seq, record FROM {p}turns WHERE session_id = ? AND answer = ? "
                "ORDER BY seq DESC LIMIT 1",
                (session_id, redact(answer)),
            ).fetchone()
            if row is not None:
                record = json.loads(row[1]) | redact_value(extra)
                db.execute(
                    "UPDATE {p}turns SET record = ? WHERE session_id = ? AND seq = ?",
                    (json.dumps(record, ensure_ascii=False), session_id, row[0]),
                )

    def _visible(self, db: Any, session_id: str, asker: Asker) -> bool:
        """Whether ``session_id`` exists in this context and ``asker`` may act on it."""
        row = db.execute(
            "SELECT owner FROM {p}sessions WHERE id = ? AND context = ?", (session_id, self.context)
        ).fetchone()
        return row is not None and (asker.admin or row[0] == asker.owner)

    def _check(self, db: Any, session_id: str, asker: Asker) -> None:
        """``NotFound`` when ``session_id`` is another context's, or another owner's and
        the asker no admin: to this asker it does not exist, and it cannot be read,
        continued or reused under its id either. An id nobody has used passes (a new
        session)."""
        row = db.execute(
            "SELECT context, owner FROM {p}sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is not None and (
            row[0] != self.context or not (asker.admin or row[1] == asker.owner)
        ):
            raise NotFound(f"No session {session_id!r}; sessions.list names them.")
