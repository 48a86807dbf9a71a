"""The same requests in English, Portuguese and Spanish, MiniLM against e5, same items.

Data: ``bench/data/skills_queries_{pt,es}.jsonl`` (all 64 skill requests) and
``bench/data/kubernetes_dev_{pt,es}.jsonl`` (the first 40 Kubernetes dev questions),
and ``bench/data/metatool_{pt,es}.jsonl`` (the first 40 queries of the MetaTool sample),
translated by hand; each line keeps its English original (``en``), so each language is
scored on the same items.

Skills: two indexes of the 864 shared skills, one per model (e5 passages, e5 queries),
searched the way ``heron.skills`` does (dense pool, then the word re-rank). Kubernetes: the
default full search on the MiniLM index, and the two-stage profile of ``bench.e5`` (e5
re-scores the default's candidates; a full e5 index of 13,178 chunks is hours on 2 cores).
The ratio column is the language's figure over English's on the same items.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import read_jsonl, table
from bench.e5 import LABELS, e5_cache, hits_at, k8s_store, minilm_cache, two_stage_pages
from bench.skills import SKILLS, WEIGHTS, hit_rates
from heron.embed import Embedder, calibration_of, embed_queries
from heron.settings import Settings
from heron.skills import SkillDir, SkillIndex
from heron.skills.index import DEFAULT_TOP_K
from heron.skills.search import LEX_WEIGHT, pool_size, rerank
from heron.store import SQLiteStore
from heron.tools import ToolRouter
from tests.conftest import sqlite_store

DATA = Path(__file__).with_name("data")
LANGUAGES = ("en", "pt", "es")


def translated(name: str) -> dict[str, list[dict[str, Any]]]:
    """``{language: items}``, English taken from the translations' ``en`` field."""
    out = {}
    for lang in LANGUAGES[1:]:
        out[lang] = [row for row in read_jsonl(DATA / f"{name}_{lang}.jsonl") if "id" in row]
    out["en"] = [{**row, "text": row["en"], "question": row["en"]} for row in out["pt"]]
    return out


def _skill_rankings(store: SQLiteStore, embedder: Embedder, texts: list[str]) -> dict:
    """Rankings by name: dense, then the word re-rank at each weight of ``WEIGHTS``."""
    vectors = embed_queries(embedder, texts)
    pools = [
        store.search("skills", t, mode="dense", top_k=pool_size(DEFAULT_TOP_K), vector=v)
        for t, v in zip(texts, vectors, strict=True)
    ]
    out = {"dense only": [[h.id for h in pool] for pool in pools]}
    for weight in WEIGHTS:
        out[weight] = [
            [h.name for h in rerank(t, pool, DEFAULT_TOP_K, weight, calibration_of(embedder))]
            for t, pool in zip(texts, pools, strict=True)
        ]
    return out


def skills() -> str:
    sets = translated("skills_queries")
    models = {"MiniLM": minilm_cache(Settings()), "e5": e5_cache()}
    rows, english, sweep = [], {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for model_name, embedder in models.items():
            store = sqlite_store(Path(tmp) / f"{model_name}.db", embedder)
            index = SkillIndex(store, [SkillDir(SKILLS, "shared")], namespace="skills")
            index.index()
            for lang in LANGUAGES:
                queries = sets[lang]
                ranked = _skill_rankings(store, embedder, [q["text"] for q in queries])
                pairs = [hit_rates(queries, ranked[w])[4:] for w in WEIGHTS]
                sweep.append((model_name, lang, *(f"{a:.3f} / {b:.3f}" for a, b in pairs)))
                for name in ("dense only", LEX_WEIGHT):
                    rates = hit_rates(queries, ranked[name])
                    if lang == "en":
                        english[(model_name, name)] = rates
                    ratio = rates[5] / english[(model_name, name)][5]
                    label = name if isinstance(name, str) else "dense + word re-rank (heron.skills)"
                    rows.append((model_name, label, lang, *rates, ratio))
            index.close()
            store.close()
            embedder.close()
    out = table(
        "Skill requests in three languages (64 each, same items): Hit@1 / Hit@3",
        [
            "model",
            "ranking",
            "lang",
            "vague @1",
            "vague @3",
            "concrete @1",
            "concrete @3",
            "all @1",
            "all @3",
            "all @3 / en",
        ],
        rows,
    )
    return out + table(
        "The word re-rank's weight (LEX_WEIGHT, tuned on the English set) across models and "
        "languages: all @1 / all @3",
        ["model", "lang", *(f"w={w}" + (" (default)" if w == LEX_WEIGHT else "") for w in WEIGHTS)],
        sweep,
    )


def kubernetes() -> str:
    sets = translated("kubernetes_dev")
    store, e5 = k8s_store(), e5_cache()
    rows, english = [], {}
    for lang in LANGUAGES:
        items = sets[lang]
        gold = [q["page"].removesuffix(".md") for q in items]
        for name, ranked in two_stage_pages(store, e5, [q["question"] for q in items]).items():
            hit1, hit5 = hits_at(ranked, gold)
            if lang == "en":
                english[name] = hit5
            rows.append((LABELS[name], lang, hit1, hit5, hit5 / english[name]))
    store.close()
    e5.close()
    return table(
        "Kubernetes dev questions in three languages (first 40, same items): page Hit@1 / Hit@5",
        ["search", "lang", "Hit@1", "Hit@5", "Hit@5 / en"],
        rows,
    )


def tools() -> str:
    """MetaTool: ``ToolRouter`` over the 199 tools, the first 40 sample queries in three
    languages, each model's own index, queries embedded in their role."""
    from bench.tools import metatool

    _, catalogue, _, _ = metatool()
    sets = translated("metatool")
    models = {"MiniLM": minilm_cache(Settings()), "e5": e5_cache()}
    rows, english = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for model_name, embedder in models.items():
            store = sqlite_store(Path(tmp) / f"{model_name}.db", embedder)
            router = ToolRouter(catalogue, store, profile="anthropic", threshold=0.0)
            for lang in LANGUAGES:
                texts = [q["text"] for q in sets[lang]]
                gold = [q["gold"][0] for q in sets[lang]]
                vectors = embed_queries(embedder, texts)
                for mode, label in (("semantic", "dense"), ("hybrid", "hybrid (default)")):
                    routes = router.route_many(texts, mode=mode, top_k=5, vectors=vectors)
                    ranked = [[t.tool.name for t in r.tools] for r in routes]
                    hit1 = float(np.mean([g in r[:1] for r, g in zip(ranked, gold, strict=True)]))
                    hit5 = float(np.mean([g in r for r, g in zip(ranked, gold, strict=True)]))
                    if lang == "en":
                        english[(model_name, mode)] = hit5
                    rows.append(
                        (model_name, label, lang, hit1, hit5, hit5 / english[(model_name, mode)])
                    )
            store.close()
            embedder.close()
    return table(
        "MetaTool requests in three languages (first 40 of the sample, same items): "
        "Recall@1 / Recall@5",
        ["model", "routing", "lang", "Recall@1", "Recall@5", "Recall@5 / en"],
        rows,
    )


def run() -> str:
    return skills() + "\n" + kubernetes() + "\n" + tools()


if __name__ == "__main__":
    import sys

    parts = {"skills": skills, "kubernetes": kubernetes, "tools": tools}
    for part in sys.argv[1:] or list(parts):
        parts[part]()
