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

``default`` measures what a user gets with no setting at all: the default profile
(``multilingual`` where the e5 extra is installed: MiniLM reads English queries, e5 every
other, one index holding both) against ``HERON_EMBEDDER=minilm``, each library indexed
from scratch (no embedding cache) and searched as ``heron search`` does.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from bench.common import LANGUAGES, WORK, table, timed, translated
from bench.e5 import (
    K8S,
    LABELS,
    e5_cache,
    hits_at,
    k8s_questions,
    k8s_store,
    minilm_cache,
    two_stage_pages,
)
from bench.skills import SKILLS, WEIGHTS, hit_rates
from heron.embed import Embedder, calibration_of, embed_queries
from heron.language import is_english
from heron.libraries import add_library, index_library, search_many
from heron.settings import Settings
from heron.skills import SkillDir, SkillIndex
from heron.skills.index import DEFAULT_TOP_K
from heron.skills.search import LEX_WEIGHT, pool_size, rerank
from heron.store import SQLiteStore, open_store
from heron.tools import ToolRouter
from tests.conftest import sqlite_store


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


PROFILES = ("minilm", "multilingual")
HOMES = WORK / "multilingual"


def _profile_store(profile: str) -> tuple[SQLiteStore, Settings, dict[str, float]]:
    """The Kubernetes library indexed under ``profile`` in a home of its own, once, with
    no embedding cache (the index time is the figure); later runs reuse it."""
    home = HOMES / profile
    settings = Settings(home=home, embed={"embedder": profile, "cache": False})
    assert settings.embed.profile == profile, "the multilingual profile needs the e5 extra"
    store = open_store(settings)  # the profile's embedder, closed with the store
    timing = home / "timing.json"
    if not timing.exists():
        add_library("kubernetes", str(K8S / "library"), settings)
        report, seconds = timed(lambda: index_library("kubernetes", store, settings=settings))
        timing.write_text(json.dumps({"seconds": seconds, "records": report.records}))
    return store, settings, json.loads(timing.read_text())


def _pages(store: SQLiteStore, settings: Settings, texts: list[str]) -> list[list[str]]:
    found = search_many(texts, store, settings=settings, library="kubernetes", top_k=5)
    return [[r.page for r in results] for results in found]


def default() -> str:
    """Kubernetes, skills and tools in three languages under the default profile and
    under ``minilm``, with every setting at its default."""
    from bench.tools import metatool

    k8s, skill_sets, tool_sets = (
        translated("kubernetes_dev"),
        translated("skills_queries"),
        translated("metatool"),
    )
    english = {f"test {kind}": pair for kind, pair in k8s_questions("test", 97).items()}
    _, catalogue, _, _ = metatool()
    rows, held, costs, english_hit = [], [], [], {}
    for profile in PROFILES:
        store, settings, figures = _profile_store(profile)
        costs.append((profile, figures["records"], round(figures["seconds"])))
        for lang in LANGUAGES:
            items = k8s[lang]
            pages = _pages(store, settings, [q["question"] for q in items])
            hit1, hit5 = hits_at(pages, [q["page"].removesuffix(".md") for q in items])
            english_hit.setdefault(("k8s", profile), hit5)
            rows.append(
                (
                    "Kubernetes (40 dev)",
                    profile,
                    lang,
                    hit1,
                    hit5,
                    hit5 / english_hit[("k8s", profile)],
                )
            )
        for name, (texts, gold) in english.items():
            held.append((name, profile, *hits_at(_pages(store, settings, texts), gold)))
        index = SkillIndex(store, [SkillDir(SKILLS, "shared")], namespace="skills")
        index.index()
        for lang in LANGUAGES:
            queries = skill_sets[lang]
            ranked = [
                [h.name for h in hits] for hits in index.search_many([q["text"] for q in queries])
            ]
            rates = hit_rates(queries, ranked)
            english_hit.setdefault(("skills", profile), rates[5])
            ratio = rates[5] / english_hit[("skills", profile)]
            rows.append(("skills (64), all @1 / @3", profile, lang, rates[4], rates[5], ratio))
        router = ToolRouter(catalogue, store, profile="anthropic", threshold=0.0)
        for lang in LANGUAGES:
            texts = [q["text"] for q in tool_sets[lang]]
            gold = [q["gold"][0] for q in tool_sets[lang]]
            routes = router.route_many(texts, top_k=5)
            ranked = [[t.tool.name for t in r.tools] for r in routes]
            hit1 = float(np.mean([g in r[:1] for r, g in zip(ranked, gold, strict=True)]))
            hit5 = float(np.mean([g in r for r, g in zip(ranked, gold, strict=True)]))
            english_hit.setdefault(("tools", profile), hit5)
            rows.append(
                (
                    "MetaTool (40), Recall @1 / @5",
                    profile,
                    lang,
                    hit1,
                    hit5,
                    hit5 / english_hit[("tools", profile)],
                )
            )
        index.close()
        store.close()
    labelled = {
        lang: float(
            np.mean(
                [not is_english(q["question"]) for q in k8s[lang]]
                + [not is_english(q["text"]) for q in skill_sets[lang] + tool_sets[lang]]
            )
        )
        for lang in LANGUAGES
    }
    out = table(
        "Three languages with every setting at its default (same items; Hit@1 / Hit@5 unless "
        "named)",
        ["set", "profile", "lang", "@1", "@5", "@5 / en"],
        rows,
    )
    out += table(
        "English held: the 97 Kubernetes test questions and their 194 vague forms, page "
        "Hit@1 / Hit@5",
        ["questions", "profile", "Hit@1", "Hit@5"],
        held,
    )
    out += table(
        "Indexing the Kubernetes library (885 pages) from scratch, no embedding cache",
        ["profile", "chunks", "seconds"],
        costs,
    )
    return out + table(
        "Requests the language check sends to e5 (all 144 requests of each language)",
        ["lang", "share read as not English"],
        [(lang, share) for lang, share in labelled.items()],
    )


def run() -> str:
    return skills() + "\n" + kubernetes() + "\n" + tools() + "\n" + default()


if __name__ == "__main__":
    import sys

    parts = {"skills": skills, "kubernetes": kubernetes, "tools": tools, "default": default}
    for part in sys.argv[1:] or list(parts):
        parts[part]()
