"""The agent's tool routing, today's settings against the recommended ones, on MetaTool and
the held-out BFCL set.

"Today" is the agent before issue 31: hybrid, the 5 best tools, the embedder's threshold
(MiniLM 0.25). "Recommended" is the pipeline document's and the new defaults: hybrid,
top-K 10, threshold 0.25 (``agent_routing_*``). A semantic row shows the other mode at
the recommended K. Each router is built as ``Agent.route`` builds its own:
``Toolbox.router(profile=..., **routing_options(settings.agent, tools))`` (the OpenAI profile,
the catalogues' tools all read-only and runnable, so the agent's filters keep them all),
with the threshold in force (not 0 as in ``bench.tools``): these are the tools a model
is offered.

Sets: MetaTool (``bench.tools``: the 2,000 single-tool and 497 two-tool queries over 199
tools) and BFCL 2026.3.23 (``bench.heldout_tools``: 1,477 queries over 1,572 functions,
never tuned on; a reworded copy of a function counts as that function, once). Figures:
Recall@5, the share of the gold tools among the first 5 offered; Recall@offered, among
all the tools offered (what the model can call); the mean number offered.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.common import table
from bench.e5 import minilm_cache
from bench.heldout_tools import bfcl
from bench.tools import metatool
from heron.agent.routing import routing_options
from heron.embed import embed_queries
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.tools import Tool, ToolRouter
from tests.conftest import sqlite_store

K = 5
CONFIGS = {
    "today: hybrid, top 5, threshold 0.25": {"routing_top_k": 5},
    "recommended: hybrid, top 10, threshold 0.25": {},
    "semantic, top 10, threshold 0.25": {"routing_mode": "semantic"},
}

Query = tuple[str, list[str]]


def recall(
    offered: Sequence[Sequence[str]], queries: Sequence[Query]
) -> tuple[float, float, float]:
    """Recall@5, Recall@offered and the mean count offered (names deduplicated)."""
    at5 = every = count = 0.0
    for names, (_, gold) in zip(offered, queries, strict=True):
        distinct = list(dict.fromkeys(names))
        wanted = set(gold)
        at5 += len(wanted & set(distinct[:K])) / len(wanted)
        every += len(wanted & set(distinct)) / len(wanted)
        count += len(names)
    n = len(queries)
    return at5 / n, every / n, count / n


def measure(
    label: str,
    tools: list[Tool],
    queries: list[Query],
    names: dict[str, str],
    store: SQLiteStore,
    namespace: str,
) -> list[tuple]:
    texts = [q for q, _ in queries]
    vectors = embed_queries(store.embedder, texts)
    rows = []
    for config, values in CONFIGS.items():
        settings = Settings(agent=values)
        options = routing_options(settings.agent, tools)
        router = ToolRouter(tools, store, profile="openai", namespace=namespace, **options)
        routes = router.route_many(texts, vectors=np.asarray(vectors))
        offered = [[names.get(t.tool.name, t.tool.name) for t in r.tools] for r in routes]
        rows.append((label, config, *recall(offered, queries)))
    return rows


def run() -> str:
    _, meta_tools, single, multi = metatool()
    bfcl_tools, bfcl_names, bfcl_queries = bfcl()
    embedder = minilm_cache(Settings())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = sqlite_store(Path(tmp) / "routing.db", embedder)
        try:
            rows += measure("MetaTool single (2,000)", meta_tools, single, {}, store, "meta")
            rows += measure("MetaTool two-tool (497)", meta_tools, multi, {}, store, "meta")
            rows += measure(
                f"BFCL held out ({len(bfcl_queries):,})",
                bfcl_tools,
                bfcl_queries,
                bfcl_names,
                store,
                "bfcl",
            )
        finally:
            store.close()
            embedder.close()
    return table(
        "Agent routing through routing_options (MiniLM, OpenAI profile)",
        ["set", "settings", "Recall@5", "Recall@offered", "offered"],
        rows,
    )


if __name__ == "__main__":
    run()
