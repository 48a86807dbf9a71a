"""``ToolUsage``: the requests each tool was successfully called for, kept as its examples.

Descriptions are a tool author's words; requests are its users'. Every request a tool
served is evidence of how people ask for it, so the agent records it here, and
``open_tools`` hands the most recent few (``PER_TOOL``) to the router as the tool's
``examples`` (see ``heron.tools.router``). A new example reaches the router the next time
a toolbox is opened; only its vector is computed then.

The log is its own SQLite file (``$HERON_HOME/tools.db``, a ``heron.db.SQLiteDatabase``),
or, when ``HERON_DATABASE_URL`` is PostgreSQL, its table there (``heron_tool_requests``):
what one replica's users taught a context's tools, every replica's router learns
(``open_tool_usage``; the SQL is written once for both). Each request is kept with the
context it was asked in (``heron.core.contexts``), and a context's toolbox learns only
its own: a request is its asker's words, and the examples are shown (``tools.list``) to
whoever may list the tools. Requests kept before contexts were recorded are the default
context's.
"""

from __future__ import annotations

import time
from pathlib import Path

from heron.core.contexts import DEFAULT
from heron.db import Database, DatabaseStore, EngineSchemas, Schema, SQLiteDatabase, open_database
from heron.redact import redact
from heron.settings import Settings

#: Examples per tool handed to the router: on MetaTool five lift Recall@5 by 0.08.
PER_TOOL = 5
#: Longer requests are cut: an example is a request, not a document.
MAX_CHARS = 500
#: The log's SQLite file in ``HERON_HOME``.
USAGE_FILE = "tools.db"

#: History, like the skills usage log (``heron.skills.usage``): a file of its own beside
#: the store, kept through a re-index. In ``heron.db.dialect``'s notation; on SQLite the
#: words render as first written, so earlier files migrate as before.
LOG = Schema(
    name="tools",
    noun="tool",
    what="the tool usage log",
    migrations=(
        """
CREATE TABLE {new}{p}tool_requests (
    tool TEXT NOT NULL,
    request TEXT NOT NULL,
    at {real} NOT NULL,
    PRIMARY KEY (tool, request)
);
""",
        # Each request is its context's: one asked in one context is no example in another.
        """
CREATE TABLE {p}tool_requests_by_context (
    context TEXT NOT NULL,
    tool TEXT NOT NULL,
    request TEXT NOT NULL,
    at {real} NOT NULL,
    PRIMARY KEY (context, tool, request)
);
INSERT INTO {p}tool_requests_by_context (context, tool, request, at)
    SELECT 'default', tool, request, at FROM {p}tool_requests;
DROP TABLE {p}tool_requests;
ALTER TABLE {p}tool_requests_by_context RENAME TO {p}tool_requests
""",
    ),
    rebuild="a new log starts on the next use",
    reopen="heron.tools.open_toolbox(settings, store)",
    advice="then retry",
)


def usage_file(path: Path) -> SQLiteDatabase:
    """The SQLite tool usage log ``path``, as ``ToolUsage`` needs it."""
    return SQLiteDatabase(path, LOG, pragmas=(), rows=None)


def open_tool_usage(settings: Settings, per_tool: int = PER_TOOL) -> ToolUsage:
    """The tool usage log of ``settings.context``: in PostgreSQL when
    ``HERON_DATABASE_URL`` names it (every replica's), else ``$HERON_HOME/tools.db``."""
    if settings.postgres_url:
        schemas = EngineSchemas(LOG, LOG, postgres_options={"rows": None})
        database = open_database(settings, schemas)
    else:
        database = usage_file(settings.home / USAGE_FILE)
    return ToolUsage(database, per_tool, context=settings.context)


class ToolUsage(DatabaseStore):
    """The requests of ``context``'s tools, on a database (``open_tool_usage``). Safe to
    share between threads."""

    def __init__(
        self, database: Database, per_tool: int = PER_TOOL, *, context: str = DEFAULT
    ) -> None:
        super().__init__(database)
        self.per_tool = per_tool
        self.context = context

    def record(self, tool: str, request: str) -> None:
        """``tool`` served ``request``; the same request again only refreshes its time.
        Kept redacted: a token pasted into a chat must not outlive it here either."""
        request = " ".join(redact(request).split())[:MAX_CHARS]
        if not request:
            return
        with self.statements(write=True) as db:
            db.execute(
                "INSERT INTO {p}tool_requests (context, tool, request, at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (context, tool, request) DO UPDATE SET at = excluded.at",
                (self.context, tool, request, time.time()),
            )

    def examples(self) -> dict[str, tuple[str, ...]]:
        """The ``per_tool`` most recent requests of each tool in this context, newest
        first."""
        with self.statements() as db:
            rows = db.execute(
                """
                SELECT tool, request FROM (
                    SELECT tool, request, row_number() OVER (
                        PARTITION BY tool ORDER BY at DESC, request
                    ) AS n
                    FROM {p}tool_requests WHERE context = ?
                ) AS ranked WHERE n <= ? ORDER BY tool, n
                """,
                (self.context, self.per_tool),
            ).fetchall()
        learned: dict[str, list[str]] = {}
        for tool, request in rows:
            learned.setdefault(tool, []).append(request)
        return {tool: tuple(requests) for tool, requests in learned.items()}
