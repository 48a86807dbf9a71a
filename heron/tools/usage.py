"""``ToolUsage``: the requests each tool was successfully called for, kept as its examples.

Descriptions are a tool author's words; requests are its users'. Every request a tool
served is evidence of how people ask for it, so the agent records it here, and
``open_tools`` hands the most recent few (``PER_TOOL``) to the router as the tool's
``examples`` (see ``heron.tools.router``). A new example reaches the router the next time
a toolbox is opened; only its vector is computed then.

The log is its own SQLite file (``$HERON_HOME/tools.db``, a ``heron.db.SQLiteDatabase``).
"""

from __future__ import annotations

import time
from pathlib import Path

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
    ),
    rebuild="a new log starts on the next use",
    reopen="heron.tools.open_toolbox(settings, store)",
)


class ToolUsage(Resource):
    """Safe to share between threads: one connection, used under a lock."""

    def __init__(self, path: Path, per_tool: int = PER_TOOL) -> None:
        self.path = path
        self.per_tool = per_tool
        self._log = SQLiteDatabase(path, _LOG, pragmas=(), rows=None)

    def record(self, tool: str, request: str) -> None:
        """``tool`` served ``request``; the same request again only refreshes its time.
        Kept redacted: a token pasted into a chat must not outlive it here either."""
        request = " ".join(redact(request).split())[:MAX_CHARS]
        if not request:
            return
        with self._log.connection() as db:
            db.execute(
                "INSERT INTO tool_requests (tool, request, at) VALUES (?, ?, ?) "
                "ON CONFLICT (tool, request) DO UPDATE SET at = excluded.at",
                (tool, request, time.time()),
            )

    def examples(self) -> dict[str, tuple[str, ...]]:
        """The ``per_tool`` most recent requests of each tool, newest first."""
        with self._log.connection() as db:
            rows = db.execute(
                """
                SELECT tool, request FROM (
                    SELECT tool, request, row_number() OVER (
                        PARTITION BY tool ORDER BY at DESC, request
                    ) AS n
                    FROM tool_requests
                ) WHERE n <= ? ORDER BY tool, n
                """,
                (self.per_tool,),
            ).fetchall()
        learned: dict[str, list[str]] = {}
        for tool, request in rows:
            learned.setdefault(tool, []).append(request)
        return {tool: tuple(requests) for tool, requests in learned.items()}

    def close(self) -> None:
        self._log.close()
