"""How Heron's SQL differs between SQLite and PostgreSQL: one ``Dialect`` per backend.

A store writes its statements and its schema once, in a notation both backends read:

- in statements, ``?`` is the placeholder, ``{p}`` comes before every table name,
  ``{lock}`` after a SELECT whose row the change then writes, ``{skip_locked}`` after a
  queue's choice of its next row, and ``{columns}`` is the store's column list;
- in a schema, ``{p}`` again, and the words of ``WORDS`` (``{serial}``, ``{real}`` ...).

>>> POSTGRES.sql("SELECT {columns} FROM {p}jobs WHERE id = ?{lock}", "id, state")
'SELECT id, state FROM heron_jobs WHERE id = %s FOR UPDATE'
>>> SQLITE.sql("SELECT {columns} FROM {p}jobs WHERE id = ?{lock}", "id, state")
'SELECT id, state FROM jobs WHERE id = ?'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

#: A schema's words on SQLite and on PostgreSQL: the key column, floating-point seconds, a
#: row id that refers to another, a truth value; ``IF NOT EXISTS`` on SQLite, whose first
#: migration also adopts a file made before migrations were numbered (version 0); after a
#: table keyed by something other than a row id, what has SQLite keep its rows in the
#: key's b-tree.
WORDS = {
    "serial": ("INTEGER PRIMARY KEY AUTOINCREMENT", "bigserial PRIMARY KEY"),
    "real": ("REAL", "double precision"),
    "bigint": ("INTEGER", "bigint"),
    "boolean": ("INTEGER", "boolean"),
    "new": ("IF NOT EXISTS ", ""),
    "keyed": (" WITHOUT ROWID", ""),
}


@dataclass(frozen=True)
class Dialect:
    """One backend's SQL: its placeholder, its table prefix and its locking clauses."""

    backend: Literal["sqlite", "postgresql"]
    #: The driver's placeholder: ``?`` (sqlite3) or ``%s`` (psycopg).
    param: str
    #: Before every table name: ``heron_`` on PostgreSQL, whose database others share.
    prefix: str = ""
    #: A row lock (``FOR UPDATE``), where a transaction does not hold the whole database.
    lock_row: str = ""
    #: ``FOR UPDATE SKIP LOCKED``: concurrent claimers pass a row another one holds
    #: instead of waiting for it.
    skip_locked: str = ""

    def sql(self, text: str, columns: str = "") -> str:
        """``text`` in this dialect (see the module docstring)."""
        return _render(self, text, columns)

    def schema(self, text: str) -> str:
        """A schema written in ``WORDS`` and ``{p}``, in this dialect's words."""
        column = 1 if self.backend == "postgresql" else 0
        words = {name: pair[column] for name, pair in WORDS.items()}
        return text.format(p=self.prefix, **words)


@functools.lru_cache(maxsize=512)
def _render(dialect: Dialect, text: str, columns: str) -> str:
    # Cached: the statements are a few dozen, and each runs thousands of times.
    filled = text.format(
        p=dialect.prefix,
        columns=columns,
        lock=dialect.lock_row,
        skip_locked=dialect.skip_locked,
    )
    return filled.replace("?", dialect.param)


SQLITE = Dialect("sqlite", "?")
POSTGRES = Dialect(
    "postgresql",
    "%s",
    prefix="heron_",
    lock_row=" FOR UPDATE",
    skip_locked=" FOR UPDATE SKIP LOCKED",
)
