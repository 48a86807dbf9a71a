"""``ToolUsage``: the requests each tool was successfully called for, kept as its examples.

Descriptions are a tool author's words; requests are its users'. Every request a tool
served is evidence of how people ask for it, so the agent records it here, and
``open_tools`` hands the most recent few (``PER_TOOL``) to the router as the tool's
``examples`` (see ``heron.tools.router``). A new example reaches the router the next time
a toolbox is opened; only its vector is computed then.

The log is its own SQLite file (``$HERON_HOME/tools.db``, a ``heron.db.SQLiteDatabase``).
Each request is kept with the context it was asked in (``heron.core.contexts``), and a
context's toolbox learns only its own: a request is its asker's words, and the examples
are shown (``tools.list``) to whoever may list the tools. Requests kept before contexts
were recorded are the default context's.
"""

from __future__ import annotations

import time
from pathlib import Path

from heron.core.contexts import DEFAULT
from heron.db import Schema, SQLiteDatabase
from heron.redact import redact
from heron.resource import Resource

#: Examples per tool handed to the router: on MetaTool five lift Recall@5 by 0.08.
PER_TOOL = 5
#: Longer requests are cut: an example is a request, not a document.
MAX_CHARS = 500

#: History, like the skills usage log (``heron.skills.usage``): a file of its own beside
#: the store, kept through a re-index.
_LOG = Schema(
    name="tools",
    what="the tool usage log",
    migrations=(
        """
CREATE TABLE IF NOT EXISTS tool_requests (
    tool TEXT NOT NULL,
    request TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (tool, request)
);
""",
        # Each request is its context's: one asked in one context is no example in another.
        """
CREATE TABLE tool_requests_by_context (
    context TEXT NOT NULL,
    tool TEXT NOT NULL,
    request TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (context, tool, request)
);
INSERT INTO tool_requests_by_context (context, tool, request, at)
    SELECT 'default', tool, request, at FROM tool_requests;
DROP TABLE tool_requests;
ALTER TABLE tool_requests_by_context RENAME TO tool_requests
""",
    ),
    rebuild="a new log starts on the next use",
    reopen="heron.tools.open_toolbox(settings, store)",
)


class ToolUsage(Resource):
    """The requests of ``context``'s tools. Safe to share between threads: one
    connection, used under a lock."""

    def __init__(self, path: Path, per_tool: int = PER_TOOL, *, context: str = DEFAULT) -> None:
        self.path = path
        self.per_tool = per_tool
        self.context = context
        self._log = SQLiteDatabase(path, _LOG, pragmas=(), rows=None)

    def record(self, tool: str, request: str) -> None:
        """``tool`` served ``request``; the same request again only refreshes its time.
        Kept redacted: a token pasted into a chat must not outlive it here either."""
        request = " ".join(redact(request).split())[:MAX_CHARS]
        if not request:
            return
        with self._log.connection() as db:
            db.execute(
                "INSERT INTO tool_requests (context, tool, request, at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (context, tool, request) DO UPDATE SET at = excluded.at",
                (self.context, tool, request, time.time()),
            )

    def examples(self) -> dict[str, tuple[str, ...]]:
        """The ``per_tool`` most recent requests of each tool in this context, newest
        first."""
        with self._log.connection() as db:
            rows = db.execute(
                """
                SELECT tool, request FROM (
                    SELECT tool, request, row_number() OVER (
                        PARTITION BY tool ORDER BY at DESC, request
                    ) AS n
                    FROM tool_requests WHERE context = ?
                ) WHERE n <= ? ORDER BY tool, n
                """,
                (self.context, self.per_tool),
            ).fetchall()
        learned: dict[str, list[str]] = {}
        for tool, request in rows:
            learned.setdefault(tool, []).append(request)
        return {tool: tuple(requests) for tool, requests in learned.items()}

    def close(self) -> None:
        self._log.close()
