"""The usage log: each skill query, what it returned, and which skill was then used.

It lives in its own SQLite file, ``$HERON_HOME/skills.db``, not in the store's key-value
table: the log is history, and must outlive ``heron store drop skills`` and a re-index
with another model; it is append-only rows that stats aggregate in SQL; and it stays local
when the store moves to a server.

``stats`` gives the hit rate per kind of query: of the queries whose outcome was reported,
the share where the skill used was among those returned (``hit@k``) and the share where
it was the first (``hit@1``).

A query is *vague* or *concrete* by a simple rule (``query_kind``): concrete when it holds
at least two specific words, or one word with a digit or a ``.``, ``/`` or ``:`` in it
(a version, a file, a domain, a time); a specific word is one that is neither a stopword
of English, Portuguese or Spanish nor, stemmed as each of them, one of ``GENERIC``'s words
of that language, the words any request uses ("create", "make", "new", "help", "thing",
"skill", "file", "app"...; "criar", "nova", "ajuda"...; "crear", "nueva", "ayuda"...).
A short request's language cannot be told reliably, so a word generic in any of the three
is generic. "create a new skill" and "criar skill nova" are vague; "publish a blog post"
and "publicar um post no blog" are concrete.

A query's outcome is a *use* (``record_use``: the skill used and its rank among those
returned, ``None`` when it was not returned) or a *miss* (``record_miss``: skills were
offered and none was used, a use row with no name and no rank). ``stats`` counts a query
with either as reported; a hit is a use of a skill it returned.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.db import Schema, SQLiteDatabase
from heron.errors import NotFound
from heron.redact import redact
from heron.resource import Resource
from heron.store.analysis import analyze, stopwords

QueryKind = Literal["vague", "concrete"]
QUERY_KINDS: tuple[QueryKind, ...] = ("vague", "concrete")

#: The words any request uses, per language: a query of them alone is vague.
_GENERIC_TEXT = {
    "en": """
        me my mine we our us you your its this these those some any all every whole own one
        from up out about over off than so too
        other another can could would should shall may might must please just also really
        very more most better best good nice pretty great new old simple quick easy what how
        why when where which who do does did doing done make made making create build write
        get got give let put take set keep help want need like try start use using work run
        go see look show find check fix improve change update add remove thing something
        anything everything stuff way kind sort lot bit skill tool task project file code app
        team
        """,
    "pt": """
        criar crie cria criando fazer faça faz fazendo novo nova novos novas ajuda ajudar ajude
        preciso precisa quero queria querer usar usando ver mostrar mostre encontrar achar
        verificar checar corrigir melhorar mudar alterar atualizar adicionar remover coisa
        coisas algo algum alguma tudo jeito tipo ferramenta tarefa projeto arquivo código
        aplicativo app equipe time habilidade melhor bom boa simples rápido fácil como qual
        quando onde quem favor pode poderia deve começar trabalhar rodar executar olhar
        construir escrever pegar dar deixar colocar manter tentar outro outra mais muito meu
        minha nosso nossa skill
        """,
    "es": """
        crear cree crea creando hacer haga hace haciendo nuevo nueva nuevos nuevas ayuda ayudar
        ayude necesito necesita quiero quería querer usar usando ver mostrar muestre encontrar
        buscar verificar revisar arreglar corregir mejorar cambiar actualizar agregar añadir
        quitar eliminar cosa cosas algo algún alguna todo manera tipo herramienta tarea
        proyecto archivo código aplicación app equipo habilidad mejor bueno buena simple rápido
        fácil cómo cuál cuándo dónde quién favor puede podría debe empezar trabajar ejecutar
        mirar construir escribir obtener dar dejar poner mantener intentar otro otra más muy
        mi nuestro nuestra skill
        """,
}
GENERIC: dict[str, frozenset[str]] = {
    code: frozenset(analyze(text, code)) for code, text in _GENERIC_TEXT.items()
}
#: What no request is specific by: English's, Portuguese's and Spanish's stopwords.
_DROPPED = stopwords("pt")
_WORD = re.compile(r"\w+")
_MARKED = re.compile(r"\S*(?:\d|\w[./:]\w)\S*")

#: History, not index: it outlives a re-index with another model and stays on the machine
#: that saw the requests, so it is a file of its own rather than tables of the store.
_LOG = Schema(
    name="skills",
    what="the skills usage log",
    migrations=(
        """
CREATE TABLE IF NOT EXISTS queries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    query TEXT NOT NULL,
    kind TEXT NOT NULL,
    returned TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS uses (
    query_id INTEGER REFERENCES queries(id),
    at REAL NOT NULL,
    name TEXT NOT NULL,
    rank INTEGER
);
CREATE INDEX IF NOT EXISTS uses_query ON uses (query_id);
""",
    ),
    rebuild="a new log starts on the next use",
    reopen="heron.skills.open_skills(settings)",
)


def query_kind(query: str) -> QueryKind:
    """``"vague"`` or ``"concrete"``, by the rule in the module docstring.

    >>> query_kind("create a new skill"), query_kind("publish a blog post")
    ('vague', 'concrete')
    >>> query_kind("criar skill nova"), query_kind("crear una skill nueva")
    ('vague', 'vague')
    """
    if _MARKED.search(query):
        return "concrete"
    words = {w for w in _WORD.findall(query.lower()) if w not in _DROPPED}
    specific = {w for w in words if not any(_generic(w, code) for code in GENERIC)}
    return "concrete" if len(specific) >= 2 else "vague"


def _generic(word: str, code: str) -> bool:
    """Whether ``word``, analysed as language ``code``, is one of its generic words (or
    a stopword there: nothing left)."""
    terms = analyze(word, code)
    return not terms or terms[0] in GENERIC[code]


@dataclass(frozen=True)
class KindStats:
    """``hits`` counts reported queries whose used skill was returned; ``top`` at rank 1."""

    kind: str
    queries: int
    reported: int
    hits: int
    top: int

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.reported if self.reported else None

    @property
    def top_rate(self) -> float | None:
        return self.top / self.reported if self.reported else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "queries": self.queries,
            "reported": self.reported,
            "hits": self.hits,
            "top": self.top,
            "hit_rate": self.hit_rate,
            "top_rate": self.top_rate,
        }


class UsageLog(Resource):
    """Append-only log of skill queries and uses in one SQLite file (created on first use).

    Safe to share between threads (a server answers from a pool): one connection, used
    under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._log = SQLiteDatabase(path, _LOG, pragmas=(), rows=None)

    def record_query(self, query: str, returned: Sequence[str]) -> int:
        """Log a query (redacted: a token pasted into it is not kept) and the names it
        returned, in rank order; returns its id."""
        with self._log.connection() as db:
            cursor = db.execute(
                "INSERT INTO queries (at, query, kind, returned) VALUES (?, ?, ?, ?)",
                (time.time(), redact(query), query_kind(query), json.dumps(list(returned))),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def record_use(self, query_id: int, name: str) -> int | None:
        """Log that skill ``name`` was used after query ``query_id``; returns its rank in
        what the query returned (``None``: the query did not return it)."""
        with self._log.connection() as db:
            row = db.execute("SELECT returned FROM queries WHERE id = ?", (query_id,)).fetchone()
        if row is None:
            raise NotFound(
                f"No skill query {query_id} in {self.path}. Use the query_id that "
                "context_for returned (heron skills context --json prints it)."
            )
        returned = json.loads(row[0])
        rank = returned.index(name) + 1 if name in returned else None
        with self._log.connection() as db:
            db.execute(
                "INSERT INTO uses (query_id, at, name, rank) VALUES (?, ?, ?, ?)",
                (query_id, time.time(), name, rank),
            )
        return rank

    def record_miss(self, query_id: int) -> None:
        """Log that query ``query_id`` offered skills and none was used: an outcome, and
        not a hit (a use row with no name and no rank)."""
        with self._log.connection() as db:
            db.execute(
                "INSERT INTO uses (query_id, at, name, rank) VALUES (?, ?, '', NULL)",
                (query_id, time.time()),
            )

    def recent(self, limit: int = 1000) -> list[tuple[str, list[str]]]:
        """The last ``limit`` queries, oldest first: each query and the names it returned."""
        with self._log.connection() as db:
            rows = db.execute(
                "SELECT query, returned FROM queries ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [(query, json.loads(returned)) for query, returned in reversed(rows)]

    def stats(self) -> list[KindStats]:
        """Per kind of query: how many, how many reported, hit@k and hit@1 counts."""
        with self._log.connection() as db:
            rows = db.execute(
                """
            SELECT q.kind, count(*), count(u.query_id), count(u.best), sum(u.best = 1)
            FROM queries q LEFT JOIN (
                SELECT query_id, min(rank) AS best FROM uses GROUP BY query_id
            ) u ON u.query_id = q.id
            GROUP BY q.kind
            """
            ).fetchall()
        found = {kind: (n, reported, hits, top or 0) for kind, n, reported, hits, top in rows}
        return [KindStats(kind, *found.get(kind, (0, 0, 0, 0))) for kind in QUERY_KINDS]

    def close(self) -> None:
        self._log.close()
