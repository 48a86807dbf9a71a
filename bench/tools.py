"""Tool routing: MetaTool retrieval quality, routing latency and start-up over 1,000 tools.

Data: MetaTool (``shared/data/tools/metatool``): 199 tools (``plugin_des.json``), the
2,000-query sample ``random.Random(0).sample(rows, 2000)`` of ``all_clean_data.csv`` and
the 497 two-tool queries. Heron's tool text adds, where ``plugin_info.json`` has the
tool's manifest (153 of 199), its human name and both of its descriptions.

Plain baselines use the plain ``plugin_des.json`` description: bm25s (Lucene BM25 over
its English stopwords and stemmer), dense cosine with the bundled MiniLM, and reciprocal
rank fusion (k = 60) of the two. Heron's rows go through ``ToolRouter`` with
``threshold=0`` so Recall@5 measures the ranking (the default threshold's effect on
recall is its own row).

"Taught" rows give each tool ``EXAMPLES`` example requests (``Tool.examples``): MetaTool
queries for that tool drawn from ``all_clean_data.csv`` outside both benchmark query sets,
as a tool's author or the usage log would supply them.

Latency: 1,000 tools (the 199, then copies under ``serverN.`` prefixes with the same
descriptions), 200 queries from the sample, the model uncached so each query is embedded
for real.
"""

from __future__ import annotations

import csv
import json
import math
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from bench.common import SHARED, percentiles, table, timed
from heron.embed import MiniLMEmbedder
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.store.fusion import reciprocal_rank_fusion
from heron.tools import Tool, ToolRouter
from tests.conftest import sqlite_store

METATOOL = SHARED / "data" / "tools" / "metatool"
SAMPLE = 2000
LATENCY_TOOLS = 1000
LATENCY_QUERIES = 200
K = 5
#: Example requests per tool in the "taught" rows.
EXAMPLES = 5


def metatool() -> tuple[
    dict[str, str], list[Tool], list[tuple[str, list[str]]], list[tuple[str, list[str]]]
]:
    plain = json.loads((METATOOL / "plugin_des.json").read_text(encoding="utf-8"))
    manifests = {}
    for item in json.loads((METATOOL / "plugin_info.json").read_text(encoding="utf-8")):
        manifests.setdefault(item["name_for_model"].lower(), item)
    tools = []
    for name, description in plain.items():
        manifest = manifests.get(name.lower())
        if manifest:
            description += (
                f" {manifest['name_for_human']}: {manifest['description_for_human']} "
                f"{manifest['description_for_model']}"
            )
        tools.append(Tool(name, description.strip(), source="import:metatool"))
    single = [(q, [t]) for q, t in random.Random(0).sample(metatool_rows(), SAMPLE)]
    golden = json.loads((METATOOL / "multi_tool_query_golden.json").read_text(encoding="utf-8"))
    multi = [(g["query"], list(g["tool"])) for g in golden]
    return plain, tools, single, multi


def metatool_rows() -> list[tuple[str, str]]:
    with open(METATOOL / "all_clean_data.csv", encoding="utf-8") as handle:
        return [(r["Query"], r["Tool"]) for r in csv.DictReader(handle)]


def with_examples(
    tools: Sequence[Tool], held_out: Sequence[tuple[str, list[str]]], k: int = EXAMPLES
) -> list[Tool]:
    """``tools``, each taught ``k`` MetaTool queries for it that are not in ``held_out``
    (the benchmark's queries), as a tool author or the usage log would supply them."""
    held = {q for q, _ in held_out}
    pool: dict[str, list[str]] = {}
    for query, name in metatool_rows():
        if query not in held:
            pool.setdefault(name, []).append(query)
    taught = []
    for tool in tools:
        mine = pool.get(tool.name, [])
        examples = tuple(random.Random(tool.name).sample(mine, min(k, len(mine))))
        taught.append(Tool(tool.name, tool.description, source=tool.source, examples=examples))
    return taught


def scores(
    ranked: Sequence[Sequence[str]], queries: Sequence[tuple[str, list[str]]]
) -> list[float]:
    """Recall@1, Recall@5 and nDCG@5 (binary gain), averaged over queries."""
    r1 = r5 = ndcg = 0.0
    for top, (_, gold) in zip(ranked, queries, strict=True):
        wanted = set(gold)
        r1 += len(wanted & set(top[:1])) / min(len(wanted), 1)
        r5 += len(wanted & set(top[:K])) / len(wanted)
        dcg = sum(1 / math.log2(i + 2) for i, t in enumerate(top[:K]) if t in wanted)
        ndcg += dcg / sum(1 / math.log2(i + 2) for i in range(min(len(wanted), K)))
    n = len(queries)
    return [r1 / n, r5 / n, ndcg / n]


def baselines(
    plain: dict[str, str], embedder: MiniLMEmbedder, queries: Sequence[str], qvecs: np.ndarray
) -> dict[str, list[list[str]]]:
    names = list(plain)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(list(plain.values()), stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=stemmer, show_progress=False)
    docs, bm_scores = retriever.retrieve(tokens, k=len(names), show_progress=False)
    dense = qvecs @ embedder.embed(list(plain.values())).T
    out: dict[str, list[list[str]]] = {"bm25s": [], "dense": [], "RRF": []}
    for i in range(len(queries)):
        order = np.argsort(-dense[i], kind="stable")
        matched = bm_scores[i] > 0
        out["bm25s"].append([names[j] for j in docs[i][matched][:K]])
        out["dense"].append([names[j] for j in order[:K]])
        fused = reciprocal_rank_fusion(
            order, dense[i][order], docs[i][matched], bm_scores[i][matched], top_k=K
        )
        out["RRF"].append([names[f.key] for f in fused])
    return out


def quality_tables(embedder: MiniLMEmbedder, store: SQLiteStore) -> str:
    plain, tools, single, multi = metatool()
    router = ToolRouter(tools, store, profile="anthropic", threshold=0.0, namespace="metatool")
    default = ToolRouter(tools, store, profile="anthropic", namespace="metatool")
    taught = ToolRouter(
        with_examples(tools, single + multi),
        store,
        profile="anthropic",
        threshold=0.0,
        namespace="metatool_taught",
    )
    text = ""
    for title, queries in (
        ("single-tool, 2,000 queries", single),
        ("two-tool, 497 queries", multi),
    ):
        texts = [q for q, _ in queries]
        qvecs = embedder.embed(texts)
        rows = [
            (f"plain {name}", *scores(r, queries))
            for name, r in baselines(plain, embedder, texts, qvecs).items()
        ]
        for mode, label in (
            ("lexical", "Heron lexical"),
            ("semantic", "Heron dense"),
            ("hybrid", "Heron hybrid"),
        ):
            ranked = []
            for i, q in enumerate(texts):
                if mode == "lexical":
                    lexical = router.scores(q, qvecs[i])[1]
                    order = np.lexsort((np.arange(lexical.size), -lexical))[:K]
                    ranked.append([router.tools[j].name for j in order if lexical[j] > 0])
                else:
                    route = router.route(q, mode=mode, top_k=K, vector=qvecs[i])
                    ranked.append([t.tool.name for t in route.tools])
            rows.append((label, *scores(ranked, queries)))
        ranked = [
            [t.tool.name for t in default.route(q, top_k=K, vector=qvecs[i]).tools]
            for i, q in enumerate(texts)
        ]
        rows.append(("Heron hybrid, threshold 0.25", *scores(ranked, queries)))
        ranked = [
            [t.tool.name for t in taught.route(q, top_k=K, vector=qvecs[i]).tools]
            for i, q in enumerate(texts)
        ]
        rows.append((f"Heron hybrid, {EXAMPLES} examples a tool", *scores(ranked, queries)))
        text += table(f"MetaTool {title}", ["method", "Recall@1", "Recall@5", "nDCG@5"], rows)
    return text


def many_tools() -> tuple[list[Tool], list[str]]:
    _, tools, single, _ = metatool()
    out = list(tools)
    copy = 0
    while len(out) < LATENCY_TOOLS:
        copy += 1
        for tool in tools[: LATENCY_TOOLS - len(out)]:
            out.append(Tool(f"server{copy}.{tool.name}", tool.description, source=f"mcp:s{copy}"))
    return out, [q for q, _ in single[:LATENCY_QUERIES]]


def latency_tables(embedder: MiniLMEmbedder, root: Path) -> str:
    tools, queries = many_tools()
    path = root / "latency.db"
    store = sqlite_store(path, embedder)
    (router, build_s) = timed(lambda: ToolRouter(tools, store, profile="openai"))
    first = router.sync_report
    qvecs = embedder.embed(queries)
    without, with_embed = [], []
    for i, q in enumerate(queries):
        start = time.perf_counter()
        router.route(q, vector=qvecs[i])
        without.append(time.perf_counter() - start)
        start = time.perf_counter()
        router.route(q)
        with_embed.append(time.perf_counter() - start)
    store.close()
    starts, embedded = [], []
    for _ in range(5):
        calls = embedder.calls
        start = time.perf_counter()
        store = sqlite_store(path, embedder)
        router = ToolRouter(tools, store, profile="openai")
        starts.append(time.perf_counter() - start)
        embedded.append(embedder.calls - calls + router.sync_report.embedded)
        store.close()
    changed = list(tools)
    changed[0] = Tool(changed[0].name, changed[0].description + " Now also in French.")
    store = sqlite_store(path, embedder)
    router, one_s = timed(lambda: ToolRouter(changed, store, profile="openai"))
    one = router.sync_report.embedded
    store.close()
    p50, p95 = percentiles(without)
    e50, e95 = percentiles(with_embed)
    s50, s95 = percentiles(starts)
    return table(
        f"Routing over {len(tools)} tools ({len(queries)} queries, hybrid, top_k 10)",
        ["measure", "p50 ms", "p95 ms", "embeddings"],
        [
            ("route, query vector given", p50, p95, 0),
            ("route, query embedded", e50, e95, len(queries)),
            ("first start-up (index built)", build_s * 1000, build_s * 1000, first.embedded),
            ("start-up, unchanged index", s50, s95, max(embedded)),
            ("start-up, one tool changed", one_s * 1000, one_s * 1000, one),
        ],
    )


def run() -> str:
    embedder = MiniLMEmbedder(Settings().models_dir)
    with tempfile.TemporaryDirectory() as tmp:
        store = sqlite_store(Path(tmp) / "quality.db", embedder)
        text = quality_tables(embedder, store)
        store.close()
        text += "\n" + latency_tables(embedder, Path(tmp))
    return text


if __name__ == "__main__":
    run()
