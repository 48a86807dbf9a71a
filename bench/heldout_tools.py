"""Held-out tool routing: the Berkeley Function Calling Leaderboard's functions, never tuned on.

Data: the ``bfcl_eval/data`` folder of the PyPI wheel ``bfcl-eval==2026.3.23`` (fetched by
``bench.packages.pypi``; nothing installed or imported from it). Four categories whose rows
each give a user's question, the functions offered with it and, in ``possible_answer/``
under the same file name, the calls expected:

- ``BFCL_v4_multiple.json`` (200 rows: one call, chosen among 2 to 4 functions),
- ``BFCL_v4_parallel_multiple.json`` (200 rows: 1 to 4 different functions called),
- ``BFCL_v4_live_multiple.json`` (1,053 rows, user-contributed: one call),
- ``BFCL_v4_live_parallel_multiple.json`` (24 rows, user-contributed: 1 to 5 functions).

Every row of the four files is used, in file order (1,477 queries; 207 of them expect
two or more different functions). The pool is every function offered by any row,
deduplicated on (name, description), first occurrence kept (its parameters are the ones
indexed): 1,572 tools, and each query is routed over all of them, not over the handful its
row offered. A name offered with several descriptions (user-contributed rows often reword
one API: ``get_current_weather`` 16 times) is kept once per description, the second and
later under the ids ``name#2``, ``name#3``...: 1,032 distinct names, 540 reworded copies.
The query is the text of the row's user messages, joined by newlines (system messages, in
37 rows, are left out: they instruct the model, they do not ask); the gold is the set of
function names in the row's ``ground_truth`` (a function called twice counts once).

Routing as in ``bench.tools``: ``ToolRouter`` with ``threshold=0`` (the ranking, not the
threshold), top 5, queries embedded in their role, one index per model (MiniLM, the
default, and the e5 profile), modes dense (``semantic``), lexical (BM25 alone, tools with
a word in common) and hybrid (the default). Each ranking is read as function names, a
reworded copy ranked below another copy of the same name skipped (a catalogue would hold
one of them; the copies must not crowd the other gold functions out), and cut at 5.
Recall@1 is whether the first name is a gold one, Recall@5 the share of the gold names
among the first 5, all@5 (the 207 multi-gold rows only) whether every gold name is there.
Never tuned on: measured once with the router as it was, and again after the change to its
fusion chosen on MetaTool and its translations (``bench.tools``, ``bench.multilingual``).
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from bench.common import table
from bench.e5 import e5_cache, minilm_cache
from bench.packages import pypi
from bench.tools import scores
from heron.embed import embed_queries
from heron.settings import Settings
from heron.tools import Tool, ToolRouter
from tests.conftest import sqlite_store

VERSION = "2026.3.23"
CATEGORIES = ("multiple", "parallel_multiple", "live_multiple", "live_parallel_multiple")
K = 5

Query = tuple[str, list[str]]


def data_root() -> Path:
    return pypi("bfcl-eval", VERSION) / "bfcl_eval" / "data"


def _rows(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        yield from (json.loads(line) for line in handle if line.strip())


def bfcl() -> tuple[list[Tool], dict[str, str], list[Query]]:
    """The pool, each tool id's function name, and (query, gold names) in file order."""
    root = data_root()
    tools: list[Tool] = []
    seen: dict[tuple[str, str], str] = {}
    variants: dict[str, int] = {}
    queries: list[Query] = []
    for category in CATEGORIES:
        answers = {a["id"]: a for a in _rows(root / "possible_answer" / f"BFCL_v4_{category}.json")}
        for row in _rows(root / f"BFCL_v4_{category}.json"):
            for function in row["function"]:
                key = (function["name"], function["description"])
                if key in seen:
                    continue
                count = variants[key[0]] = variants.get(key[0], 0) + 1
                tool_id = key[0] if count == 1 else f"{key[0]}#{count}"
                seen[key] = tool_id
                tools.append(
                    Tool(tool_id, key[1], function.get("parameters") or {}, source="import:bfcl")
                )
            text = "\n".join(
                m["content"] for turn in row["question"] for m in turn if m["role"] == "user"
            )
            gold = list(dict.fromkeys(next(iter(c)) for c in answers[row["id"]]["ground_truth"]))
            queries.append((text, gold))
    names = {tool_id: name for (name, _), tool_id in seen.items()}
    return tools, names, queries


def rankings(
    router: ToolRouter, names: dict[str, str], texts: Sequence[str], vectors: np.ndarray
) -> dict[str, list[list[str]]]:
    """The first ``K`` distinct function names per query in each mode (a reworded copy of a
    function ranked below another copy adds nothing)."""
    deep = K * max(Counter(names.values()).values())  # enough for K distinct names
    tops: dict[str, list[list[str]]] = {}
    for mode, label in (("semantic", "dense"), ("hybrid", "hybrid")):
        routes = router.route_many(texts, mode=mode, top_k=deep, vectors=vectors)
        tops[label] = [[t.tool.name for t in r.tools] for r in routes]
    tops["lexical"] = []
    for text, vector in zip(texts, vectors, strict=True):
        lexical = router.scores(text, vector)[1]
        order = np.lexsort((np.arange(lexical.size), -lexical))
        tops["lexical"].append([router.tools[j].name for j in order if lexical[j] > 0])
    return {
        mode: [list(dict.fromkeys(names[t] for t in top))[:K] for top in ranked]
        for mode, ranked in tops.items()
    }


def all_gold(ranked: Sequence[Sequence[str]], queries: Sequence[Query]) -> float:
    """Share of the multi-gold queries with every gold name in the top ``K``."""
    multi = [(set(top[:K]), set(g)) for top, (_, g) in zip(ranked, queries, strict=True)]
    return float(np.mean([gold <= top for top, gold in multi if len(gold) > 1]))


def run() -> str:
    tools, names, queries = bfcl()
    texts = [q for q, _ in queries]
    models = {"MiniLM": minilm_cache(Settings()), "e5": e5_cache()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model_name, embedder in models.items():
            store = sqlite_store(Path(tmp) / f"{model_name}.db", embedder)
            router = ToolRouter(tools, store, profile="anthropic", threshold=0.0)
            vectors = embed_queries(embedder, texts)
            for mode, ranked in rankings(router, names, texts, vectors).items():
                r1, r5, _ = scores(ranked, queries)
                rows.append((model_name, mode, r1, r5, all_gold(ranked, queries)))
            store.close()
            embedder.close()
    multi = sum(len(g) > 1 for _, g in queries)
    return table(
        f"BFCL {VERSION} held out: {len(queries)} queries routed over {len(tools)} functions "
        f"(all@5 over the {multi} multi-gold queries)",
        ["model", "routing", "Recall@1", "Recall@5", "all@5"],
        rows,
    )


if __name__ == "__main__":
    run()
