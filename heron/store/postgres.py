"""The shared backend: PostgreSQL with pgvector, for several Heron servers on one database.

Dense search is pgvector's HNSW (inner product on unit vectors), one partial index per
namespace because namespaces differ in dimension. Lexical search is an inverted index
in a table: ``heron_postings`` holds, per namespace, term and record, how often the term
occurs in the title and in the body, so a query reads the postings of its terms only and
scores them in SQL with the BM25 that SQLite's FTS5 computes (same k1, b, IDF, field
weights, document length) over the same pre-analysed terms (``heron.store.analysis``).
A tsvector with a GIN index finds matching records as fast but cannot give the term
frequencies BM25 needs without unpacking each match (151 ms p50 per SciFact query, against
38 to 57 ms for the postings on the same busy machine), and ``ts_rank_cd`` ranks unlike
SQLite; see docs/postgres.md. Everything else (upserts, the search modes, hybrid fusion,
hits) is ``heron.store.sql.SQLStore``, the same code the SQLite store runs.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from heron.errors import InputError, StoreError
from heron.extras import missing

try:
    import psycopg
except ImportError as exc:  # the postgres extra: a clear error wherever this is imported
    raise StoreError(missing("postgres")) from exc

from heron.db.postgres import PostgresDatabase, Vector
from heron.embed.base import Embedder
from heron.store.analysis import analyze, query_terms
from heron.store.base import NamespaceInfo
from heron.store.schema import EF_SEARCH, languages_sql
from heron.store.sql import FIELD_WEIGHTS, Row, SQLStore
from heron.store.validate import FilterTerms, check_model, no_namespace

T = TypeVar("T")
#: SQLite FTS5's BM25 constants, so both backends score alike.
K1, B = 1.2, 0.75
#: HNSW graph: m and ef_construction as the SQLite store's usearch graph (16, 128); with
#: pgvector's default ef_construction (64) recall@10 at 1M vectors was 0.81, with 128 0.92.
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 128
#: Longer terms are not indexed: a B-tree entry must fit in a third of a page.
_MAX_TERM = 1000
_SEPARATORS = re.compile(r"[\W_]+")


def _fold(char: str) -> str:
    """``char`` without diacritics where FTS5's ``remove_diacritics 2`` removes them
    (Latin letters: up to U+036F and U+1E00-U+1EFF)."""
    if char < "\u0370" or "\u1e00" <= char <= "\u1eff":
        parts = unicodedata.normalize("NFD", char)
        return "".join(c for c in parts if not unicodedata.combining(c))
    return char


def fts_terms(terms: Iterable[str]) -> list[str]:
    """The analysed terms as SQLite sees them: FTS5's unicode61 tokenizer splits them at
    characters that are not letters or digits (``_``) and folds diacritics away."""
    out = []
    for term in terms:
        if term.isascii() and term.isalnum():
            out.append(term)
        else:
            out += [p for p in _SEPARATORS.split("".join(map(_fold, term))) if p]
    return out


def _postings(row: Row) -> tuple[list[tuple[str, int, int]], int]:
    """``(term, in title, in body)`` of each term of a record, and its number of terms."""
    title_terms = fts_terms(analyze(row.title, row.language))
    body_terms = fts_terms(analyze(row.text, row.language))
    in_title, in_body = Counter(title_terms), Counter(body_terms)
    postings = [
        (term, in_title[term], in_body[term])
        for term in dict.fromkeys(title_terms + body_terms)
        if len(term.encode()) <= _MAX_TERM
    ]
    return postings, len(title_terms) + len(body_terms)


def hnsw_index_sql(ns_id: int, dim: int) -> str:
    """The namespace's HNSW index: partial, on the vectors cast to the namespace's dimension
    (searches must use the same cast and ``namespace_id`` literal to use it)."""
    return (
        f"CREATE INDEX heron_records_hnsw_{int(ns_id)} ON heron_records USING hnsw "
        f"((embedding::vector({int(dim)})) vector_ip_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE namespace_id = {int(ns_id)}"
    )


def _filter_sql(filters: FilterTerms) -> tuple[str, list[Any]]:
    """``[("collection", ["tasks"]), ("tags", ["a", "b"])]`` -> SQL on ``r.metadata``: the
    field's JSON value equals one of the values' JSON."""
    clauses, params = [], []
    for field_name, values in filters:
        clauses.append("AND r.metadata #> %s = ANY(%s::jsonb[])")
        params += [field_name.split("."), [json.dumps(v) for v in values]]
    return " ".join(clauses), params


@dataclass(frozen=True)
class _Scope:
    """One search's namespace (id and dimension), its filter as SQL on ``r.metadata`` and
    the languages its records are analysed in (a query is analysed in each)."""

    ns_id: int
    dim: int
    where: str
    params: list[Any]
    languages: tuple[str, ...]


class PostgresStore(SQLStore[_Scope]):
    """``Store`` on a PostgreSQL database with pgvector. Safe to share between threads,
    processes and machines.

    Built on the pool ``heron.db.open_database`` opened for ``heron.store.schema.STORE``
    (rows as tuples, pgvector's vectors as float32 arrays), which it owns: ``close()``
    closes it. ``heron.store.open_store`` opens both, on PostgreSQL when
    ``HERON_DATABASE_URL`` names a ``postgresql://`` database::

    >>> store = open_store(settings, embedder)                 # doctest: +SKIP
    >>> store.search("docs", "what runs a container?")[0].id  # doctest: +SKIP
    'a'
    """

    def __init__(self, database: PostgresDatabase, embedder: Embedder) -> None:
        super().__init__(embedder)
        self._database = database
        self.url = database.url
        self.where = database.where

    def _run(self, work: Callable[[psycopg.Connection], T], *, write: bool = False) -> T:
        """``work`` on the database (``PostgresDatabase.run``: retried when the connection
        drops, which every operation here allows: upserts by id and hash, deletes by id,
        key-value sets)."""
        self._check_open()
        return self._database.run(work, write=write)

    # -- namespaces ---------------------------------------------------------------------

    def namespaces(self) -> list[NamespaceInfo]:
        rows = self._run(
            lambda db: db.execute(
                'SELECT name, model_id, dim, docs FROM heron_namespaces ORDER BY name COLLATE "C"'
            ).fetchall()
        )
        return [NamespaceInfo(*row) for row in rows]

    def _namespace(self, db: psycopg.Connection, name: str, *, lock: bool = False) -> int:
        """Id of an existing namespace, checked against the model; ``lock`` serialises
        writers of the namespace so its document and term counts stay exact."""
        row = db.execute(
            "SELECT id, model_id, dim FROM heron_namespaces WHERE name = %s"
            + (" FOR UPDATE" if lock else ""),
            (name,),
        ).fetchone()
        if row is None:
            known = db.execute(
                'SELECT name FROM heron_namespaces ORDER BY name COLLATE "C"'
            ).fetchall()
            raise no_namespace(name, [k[0] for k in known])
        check_model(name, row[1], row[2], self.embedder)
        return int(row[0])

    def _ensure_namespace(self, name: str) -> None:
        def create(db: psycopg.Connection) -> None:
            row = db.execute(
                "INSERT INTO heron_namespaces (name, model_id, dim) VALUES (%s, %s, %s) "
                "ON CONFLICT (name) DO NOTHING RETURNING id",
                (name, self.embedder.model_id, self.embedder.dim),
            ).fetchone()
            if row is not None:
                ns_id, dim = int(row[0]), int(self.embedder.dim)
                db.execute(hnsw_index_sql(ns_id, dim))
            self._namespace(db, name)  # refuses a namespace of another model

        self._run(create, write=True)

    def count(self, namespace: str) -> int:
        def count(db: psycopg.Connection) -> int:
            ns_id = self._namespace(db, namespace)
            row = db.execute("SELECT docs FROM heron_namespaces WHERE id = %s", (ns_id,))
            return int(row.fetchone()[0])  # type: ignore[index]

        return self._run(count)

    def ids(self, namespace: str) -> list[str]:
        def ids(db: psycopg.Connection) -> list[str]:
            ns_id = self._namespace(db, namespace)
            rows = db.execute(
                'SELECT id FROM heron_records WHERE namespace_id = %s ORDER BY id COLLATE "C"',
                (ns_id,),
            ).fetchall()
            return [row[0] for row in rows]

        return self._run(ids)

    def _drop(self, namespace: str) -> bool:
        def drop(db: psycopg.Connection) -> bool:
            row = db.execute(
                "DELETE FROM heron_namespaces WHERE name = %s RETURNING id", (namespace,)
            ).fetchone()
            kv = db.execute("DELETE FROM heron_kv WHERE namespace = %s", (namespace,)).rowcount
            if row is not None:
                db.execute(f"DROP INDEX IF EXISTS heron_records_hnsw_{int(row[0])}")
            return row is not None or kv > 0

        return self._run(drop, write=True)

    # -- writes -------------------------------------------------------------------------

    def _check_row(self, row: Row) -> None:
        if "\x00" in row.text or "\x00" in row.id:
            raise InputError(f"Record {row.id!r}: PostgreSQL cannot store NUL characters.")

    def _stored_hashes(self, namespace: str, ids: list[str]) -> dict[str, str]:
        def stored(db: psycopg.Connection) -> dict[str, str]:
            ns_id = self._namespace(db, namespace)
            found = db.execute(
                "SELECT id, hash FROM heron_records WHERE namespace_id = %s AND id = ANY(%s)",
                (ns_id, ids),
            ).fetchall()
            return dict(found)

        return self._run(stored)

    def _write_rows(self, namespace: str, rows: list[Row], vectors: np.ndarray) -> int:
        terms = [_postings(row) for row in rows]  # before the lock is taken
        ids = [row.id for row in rows]

        def write(db: psycopg.Connection) -> int:
            ns_id = self._namespace(db, namespace, lock=True)
            old = db.execute(
                "SELECT count(*), coalesce(sum(length), 0) FROM heron_records "
                "WHERE namespace_id = %s AND id = ANY(%s)",
                (ns_id, ids),
            ).fetchone()
            with db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO heron_records "
                    "(namespace_id, id, text, metadata, hash, embedding, length, language) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (namespace_id, id) DO UPDATE SET text = excluded.text, "
                    "metadata = excluded.metadata, hash = excluded.hash, "
                    "embedding = excluded.embedding, length = excluded.length, "
                    "language = excluded.language",
                    [
                        (
                            ns_id,
                            row.id,
                            row.text,
                            row.metadata,
                            row.hash,
                            Vector(v),
                            length,
                            row.language,
                        )
                        for row, v, (_, length) in zip(rows, vectors, terms, strict=True)
                    ],
                )
                keys = dict(
                    cur.execute(
                        "SELECT id, key FROM heron_records WHERE namespace_id = %s "
                        "AND id = ANY(%s)",
                        (ns_id, ids),
                    ).fetchall()
                )
                cur.execute(
                    "DELETE FROM heron_postings WHERE key = ANY(%s)", (list(keys.values()),)
                )
                with cur.copy(
                    "COPY heron_postings (namespace_id, term, key, in_title, in_body, length) "
                    "FROM STDIN"
                ) as copy:
                    for row, (postings, length) in zip(rows, terms, strict=True):
                        for term, in_title, in_body in postings:
                            copy.write_row((ns_id, term, keys[row.id], in_title, in_body, length))
            existed, old_tokens = int(old[0]), int(old[1])  # type: ignore[index]
            tokens = sum(length for _, length in terms) - old_tokens
            db.execute(
                "UPDATE heron_namespaces SET docs = docs + %s, tokens = tokens + %s WHERE id = %s",
                (len(rows) - existed, tokens, ns_id),
            )
            return existed

        return self._run(write, write=True)

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        ids = list(ids)

        def delete(db: psycopg.Connection) -> int:
            ns_id = self._namespace(db, namespace, lock=True)
            if not ids:
                return 0
            row = db.execute(
                "WITH gone AS (DELETE FROM heron_records WHERE namespace_id = %s "
                "AND id = ANY(%s) RETURNING length) "
                "SELECT count(*), coalesce(sum(length), 0) FROM gone",
                (ns_id, ids),
            ).fetchone()
            count, tokens = int(row[0]), int(row[1])  # type: ignore[index]
            db.execute(
                "UPDATE heron_namespaces SET docs = docs - %s, tokens = tokens - %s WHERE id = %s",
                (count, tokens, ns_id),
            )
            return count

        return self._run(delete, write=True)

    # -- reads --------------------------------------------------------------------------

    def _fetch(self, namespace: str, id: str) -> tuple[str, str, np.ndarray] | None:
        def fetch(db: psycopg.Connection) -> tuple[str, str, np.ndarray] | None:
            ns_id = self._namespace(db, namespace)
            with db.cursor(binary=True) as cur:
                row = cur.execute(
                    "SELECT text, metadata::text, embedding FROM heron_records "
                    "WHERE namespace_id = %s AND id = %s",
                    (ns_id, id),
                ).fetchone()
            return None if row is None else (row[0], row[1], row[2])

        return self._run(fetch)

    def _scope(self, namespace: str, filters: FilterTerms, *, dense: bool) -> _Scope:
        where, params = _filter_sql(filters)

        def scope(db: psycopg.Connection) -> tuple[int, tuple[str, ...]]:
            ns_id = self._namespace(db, namespace)
            rows = db.execute(languages_sql("heron_records", "%s"), (ns_id, ns_id)).fetchall()
            return ns_id, tuple(row[0] for row in rows) or ("en",)

        ns_id, languages = self._run(scope)
        # _namespace checked that the namespace has the embedder's dimension.
        return _Scope(ns_id, self.embedder.dim, where, params, languages)

    def _dense(
        self, scope: _Scope, vector: np.ndarray, k: int, *, with_vectors: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Nearest ``k`` by inner product (= cosine: vectors are unit length)."""
        distance = f"r.embedding::vector({int(scope.dim)}) <#> %s"
        columns = f"r.key, -({distance})" + (", r.embedding" if with_vectors else "")

        def nearest(db: psycopg.Connection) -> list[tuple[Any, ...]]:
            # The namespace id is a literal: a prepared statement's generic plan could not
            # prove that the namespace's partial index applies, and would scan every row.
            deep = k > EF_SEARCH  # a wider search for this query only (pgvector: <= 1000)
            with db.cursor(binary=True) as cur, db.transaction() if deep else nullcontext():
                if deep:
                    cur.execute(
                        "SELECT set_config('hnsw.ef_search', %s, true)", (str(min(k, 1000)),)
                    )
                return cur.execute(
                    f"SELECT {columns} FROM heron_records r "
                    f"WHERE r.namespace_id = {int(scope.ns_id)} {scope.where} "
                    f"ORDER BY {distance} LIMIT %s",
                    (Vector(vector), *scope.params, Vector(vector), k),
                ).fetchall()

        rows = self._run(nearest)
        keys = np.array([row[0] for row in rows], dtype=np.int64)
        scores = np.array([row[1] for row in rows], dtype=np.float32)
        if not with_vectors:
            return keys, scores, None
        vectors = np.array([row[2] for row in rows], dtype=np.float32)
        return keys, scores, vectors.reshape(len(rows), scope.dim)

    def _vectors(self, scope: _Scope, keys: np.ndarray) -> dict[int, np.ndarray]:
        if not keys.size:
            return {}

        def fetch(db: psycopg.Connection) -> list[tuple[Any, ...]]:
            with db.cursor(binary=True) as cur:
                return cur.execute(
                    "SELECT key, embedding FROM heron_records WHERE key = ANY(%s)",
                    (keys.tolist(),),
                ).fetchall()

        return {int(key): vector for key, vector in self._run(fetch)}

    def _lexical(
        self, scope: _Scope, query: str, k: int, *, side: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        # The pool gives the hybrid worker its own connection: ``side`` needs nothing here.
        scores = self._bm25(scope, query, k, scope.where, scope.params, None)
        keys = np.array(list(scores), dtype=np.int64)
        return keys, np.array(list(scores.values()), dtype=np.float32)

    def _bm25_of(self, scope: _Scope, query: str, keys: np.ndarray) -> dict[int, float]:
        return self._bm25(scope, query, None, "", [], keys)

    def _bm25(
        self,
        scope: _Scope,
        query: str,
        k: int | None,
        where: str,
        params: list[Any],
        keys: np.ndarray | None,
    ) -> dict[int, float]:
        """FTS5's BM25 of the records matching any query term, best first: the top ``k``,
        or those among ``keys``. IDF ``log((N - n + 0.5) / (n + 0.5))`` (at least 1e-6),
        term frequency weighted by field, length normalised by the mean record length."""
        ns_id = scope.ns_id
        terms = fts_terms(query_terms(query, scope.languages))
        terms = [t for t in dict.fromkeys(terms) if len(t.encode()) <= _MAX_TERM]
        if not terms or (keys is not None and not keys.size):
            return {}
        title_weight, body_weight = FIELD_WEIGHTS
        freq = f"(p.in_title * {float(title_weight)} + p.in_body * {float(body_weight)})"

        def score(db: psycopg.Connection) -> list[tuple[Any, ...]]:
            # The record count and each term's record count in one statement, so one
            # snapshot: read apart, a writer committing in between could make a term
            # match more records than the count says (and the IDF's log undefined).
            # Literal namespace ids, as in _dense: the plan must see them (index prefix).
            counts = db.execute(
                "SELECT n.docs, n.tokens, (SELECT count(*) FROM heron_postings p "
                f"WHERE p.namespace_id = {int(ns_id)} AND p.term = q.term) "
                "FROM heron_namespaces n, unnest(%s::text[]) WITH ORDINALITY AS q (term, i) "
                "WHERE n.id = %s ORDER BY q.i",
                (terms, ns_id),
            ).fetchall()
            if not counts or not counts[0][0]:
                return []
            docs, tokens = counts[0][0], counts[0][1]
            idfs = [max(math.log((docs - n + 0.5) / (n + 0.5)), 1e-6) for _, _, n in counts]
            only = "AND p.key = ANY(%s)" if keys is not None else ""
            join = "JOIN heron_records r ON r.key = p.key" if where else ""
            limit = "LIMIT %s" if k is not None else ""
            return db.execute(
                f"SELECT p.key, sum(q.idf * {freq} * %s / ({freq} + %s * p.length + %s)) AS s "
                "FROM unnest(%s::text[], %s::float8[]) AS q (term, idf) "
                f"JOIN heron_postings p ON p.namespace_id = {int(ns_id)} AND p.term = q.term "
                f"{join} WHERE true {only} {where} "
                f"GROUP BY p.key ORDER BY s DESC, p.key {limit}",
                (
                    K1 + 1,
                    K1 * B * docs / tokens if tokens else 0.0,
                    K1 * (1 - B),
                    terms,
                    idfs,
                    *([keys.tolist()] if keys is not None else []),
                    *params,
                    *([k] if k is not None else []),
                ),
            ).fetchall()

        return {int(key): float(s) for key, s in self._run(score)}

    def _hit_rows(self, keys: list[int]) -> dict[int, tuple[str, str, str]]:
        rows = self._run(
            lambda db: db.execute(
                "SELECT key, id, text, metadata::text FROM heron_records WHERE key = ANY(%s)",
                (keys,),
            ).fetchall()
        )
        return {key: (rid, text, metadata) for key, rid, text, metadata in rows}

    # -- key-value state ----------------------------------------------------------------

    def kv_get(self, namespace: str, key: str) -> str | None:
        row = self._run(
            lambda db: db.execute(
                "SELECT value FROM heron_kv WHERE namespace = %s AND key = %s", (namespace, key)
            ).fetchone()
        )
        return row[0] if row else None

    def kv_set(self, namespace: str, key: str, value: str) -> None:
        self._run(
            lambda db: db.execute(
                "INSERT INTO heron_kv VALUES (%s, %s, %s) "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
                (namespace, key, value),
            )
        )

    def kv_items(self, namespace: str, prefix: str = "") -> dict[str, str]:
        rows = self._run(
            lambda db: db.execute(
                "SELECT key, value FROM heron_kv WHERE namespace = %s AND left(key, %s) = %s "
                'ORDER BY key COLLATE "C"',
                (namespace, len(prefix), prefix),
            ).fetchall()
        )
        return dict(rows)

    def kv_delete(self, namespace: str, key: str) -> None:
        self._run(
            lambda db: db.execute(
                "DELETE FROM heron_kv WHERE namespace = %s AND key = %s", (namespace, key)
            )
        )

    def _close(self) -> None:
        self._database.close()
