"""The skill index on the shared skills: parsing, indexing, latency, retrieval quality.

Data: the 872 ``SKILL.md`` files under ``shared/data/skills`` (12 Anthropic skills, 28
Composio ones and 832 templated "<app>-automation" skills, the realistic distractors),
scanned as one directory: 864 names after the 8 duplicates are shadowed. Queries:
``bench/skills_queries.jsonl``, 64 requests written as a user would type them, half vague
("create a new skill") and half concrete ("publish a blog post on hashnode"), each with
its gold skill name(s).

Latency is measured over 1,000 skills (the 864 plus 136 renamed copies of templated ones)
through ``SkillIndex.search``, with an uncached model so each query is embedded for real.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import SHARED, percentiles, read_jsonl, table, timed
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.skills import ScanReport, Skill, SkillDir, SkillIndex, query_kind
from heron.skills.index import DEFAULT_TOP_K
from heron.skills.search import LEX_WEIGHT, pool_size, rerank
from heron.skills.sync import index_skills
from tests.conftest import sqlite_store

SKILLS = SHARED / "data" / "skills"
QUERIES = Path(__file__).with_name("skills_queries.jsonl")
LATENCY_SIZE = 1000
LATENCY_ROUNDS = 5
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)


def hit_rates(queries: list[dict[str, Any]], ranked: list[list[str]]) -> list[float]:
    """Hit@1 and Hit@3 for the vague half, the concrete half and all queries."""
    out = []
    for kind in ("vague", "concrete", None):
        pairs = [(q, r) for q, r in zip(queries, ranked, strict=True) if kind in (None, q["kind"])]
        for k in (1, 3):
            out.append(sum(bool(set(q["gold"]) & set(r[:k])) for q, r in pairs) / len(pairs))
    return out


def parse_table(skills: SkillIndex) -> tuple[str, ScanReport]:
    report, seconds = timed(skills.scan)
    unreported = report.files - len(report.parsed) - len(report.failures)
    codes: dict[str, int] = {}
    for skill in report.recovered:
        for diagnostic in skill.diagnostics:
            codes[diagnostic.code] = codes.get(diagnostic.code, 0) + 1
    text = table(
        f"Parsing every SKILL.md under shared/data/skills ({report.files} files)",
        ["files", "parsed", "recovered", "failed", "unreported", "shadowed", "skills", "scan s"],
        [
            (
                report.files,
                len(report.parsed),
                len(report.recovered),
                len(report.failures),
                unreported,
                len(report.shadowed),
                len(report.skills),
                seconds,
            )
        ],
    )
    if codes:
        text += "\nRecoveries: " + ", ".join(f"{c} {n}" for c, n in sorted(codes.items())) + "\n"
    return text, report


def index_table(skills: SkillIndex, model: MiniLMEmbedder, cache: CachedEmbedder) -> str:
    rows = []
    for label in ("first index (cold cache)", "again, nothing changed"):
        texts, calls = cache.misses, model.calls
        report, seconds = timed(skills.index)
        result = report.result
        embedded, batches = cache.misses - texts, model.calls - calls
        rows.append(
            (label, result.added, result.updated, result.unchanged, embedded, batches, seconds)
        )
    return table(
        "Indexing the shared skills (scan + upsert; 2 cores)",
        ["run", "added", "updated", "unchanged", "texts embedded", "model batches", "seconds"],
        rows,
    )


def latency_table(
    path: Path, skills: Sequence[Skill], queries: list[str], cache: CachedEmbedder
) -> str:
    """p50/p95 of ``SkillIndex.search`` over ``LATENCY_SIZE`` skills, query embedded each time
    by the model (``cache`` only spares re-embedding the skills)."""
    model = cache.inner
    copies = [
        dataclasses.replace(s, name=f"{s.name}-mirror")
        for s in skills
        if "composio-skills" in str(s.path)
    ][: LATENCY_SIZE - len(skills)]
    with sqlite_store(path, cache) as store:
        index_skills(store, [*skills, *copies], namespace="skills-1000")
    with sqlite_store(path, model) as plain:  # a SkillIndex does not close its store
        uncached = SkillIndex(plain, [], namespace="skills-1000")
        count = uncached.store.count("skills-1000")
        uncached.search(queries[0])  # builds the vector index
        search, embed = [], []
        for _ in range(LATENCY_ROUNDS):
            for query in queries:
                search.append(timed(lambda q=query: uncached.search(q))[1])
                embed.append(timed(lambda q=query: model.embed([q]))[1])
        uncached.close()
    return table(
        f"Skill query latency over {count} skills ({len(search)} queries, one at a time, "
        f"top {DEFAULT_TOP_K} from a pool of {pool_size(DEFAULT_TOP_K)})",
        ["step", "p50 ms", "p95 ms"],
        [
            ("SkillIndex.search, query embedding included", *percentiles(search)),
            ("query embedding alone", *percentiles(embed)),
        ],
    )


def quality_tables(skills: SkillIndex, queries: list[dict[str, Any]]) -> str:
    store, texts = skills.store, [q["text"] for q in queries]
    vectors = store.embedder.embed(texts)

    def store_mode(mode: str) -> list[list[str]]:
        return [
            [h.id for h in store.search(skills.namespace, t, mode=mode, top_k=10, vector=v)]
            for t, v in zip(texts, vectors, strict=True)
        ]

    rankings = {
        "dense only": store_mode("dense"),
        "lexical only (BM25)": store_mode("lexical"),
        "hybrid: the store's fusion of both": store_mode("hybrid"),
        "heron.skills: dense + word re-rank": [
            [h.name for h in hits] for hits in skills.search_many(texts)
        ],
    }
    header = ["ranking", "vague @1", "vague @3", "concrete @1", "concrete @3", "all @1", "all @3"]
    text = table(
        f"Skill retrieval, {len(queries)} queries over {store.count(skills.namespace)} skills "
        "(Hit@k: a gold skill in the top k)",
        header,
        [(name, *hit_rates(queries, ranked)) for name, ranked in rankings.items()],
    )
    pools = [
        store.search(skills.namespace, t, mode="dense", top_k=pool_size(DEFAULT_TOP_K), vector=v)
        for t, v in zip(texts, vectors, strict=True)
    ]
    sweep = []
    for weight in WEIGHTS:
        ranked = [
            [h.name for h in rerank(t, pool, DEFAULT_TOP_K, weight)]
            for t, pool in zip(texts, pools, strict=True)
        ]
        label = f"{weight:.1f}" + (" (default)" if weight == LEX_WEIGHT else "")
        sweep.append((label, *hit_rates(queries, ranked)))
    text += "\n" + table(
        "Sensitivity to LEX_WEIGHT (score = cosine + weight x lex; 0 = dense order)",
        ["weight", *header[1:]],
        sweep,
    )
    agree = sum(query_kind(q["text"]) == q["kind"] for q in queries)
    text += (
        f"\nquery_kind (the usage log's vague/concrete rule) agrees with the hand labels "
        f"on {agree} of {len(queries)} queries.\n"
    )
    print(text.splitlines()[-1], flush=True)
    return text


def run() -> str:
    settings = Settings()
    queries = read_jsonl(QUERIES)
    with tempfile.TemporaryDirectory() as tmp:
        model = MiniLMEmbedder(settings.models_dir, threads=settings.embed.threads)
        cache = CachedEmbedder(model, Path(tmp) / "embeddings.db")
        store = sqlite_store(Path(tmp) / "heron.db", cache)
        skills = SkillIndex(store, [SkillDir(SKILLS, "shared")])
        parsed, report = parse_table(skills)
        out = parsed + "\n" + index_table(skills, model, cache)
        out += "\n" + quality_tables(skills, queries)
        out += "\n" + latency_table(
            Path(tmp) / "latency.db", report.skills, [q["text"] for q in queries], cache
        )
        skills.close()
        store.close()
    return out


if __name__ == "__main__":
    run()
