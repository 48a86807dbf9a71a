"""Retrieval quality on BEIR SciFact (test split, 300 claims, nDCG@10), with baselines.

Heron's three modes run through ``SQLiteStore.search_many``. In the same run, the plain
baselines: bm25s with the same stemming, dense MiniLM by brute force, their reciprocal
rank fusion, and relative-score fusion (min-max each list, then add: the algorithm of
LlamaIndex's QueryFusionRetriever, the best peer measured here).
"""

from __future__ import annotations

import time

import numpy as np

from bench.common import SCIFACT, WORK, ndcg_at_10, percentiles, read_jsonl, table
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import Record
from heron.store.analysis import STOPWORDS
from tests.conftest import sqlite_store


def _rank(scores: np.ndarray, ids: list[str], k: int) -> list[tuple[str, float]]:
    top = np.argsort(-scores)[:k]
    return [(ids[i], float(scores[i])) for i in top]


def rrf(lists: list[list[tuple[str, float]]], k: int = 60) -> list[str]:
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, (doc, _) in enumerate(ranked, 1):
            fused[doc] = fused.get(doc, 0.0) + 1 / (k + rank)
    return sorted(fused, key=fused.__getitem__, reverse=True)


def relative_score(lists: list[list[tuple[str, float]]]) -> list[str]:
    fused: dict[str, float] = {}
    for ranked in lists:
        scores = np.array([s for _, s in ranked])
        low, high = scores.min(), scores.max()
        for doc, score in ranked:
            fused[doc] = fused.get(doc, 0.0) + (score - low) / ((high - low) or 1.0)
    return sorted(fused, key=fused.__getitem__, reverse=True)


def run() -> str:
    import bm25s
    import Stemmer

    docs = read_jsonl(SCIFACT / "corpus.jsonl")
    queries = read_jsonl(SCIFACT / "queries-test.jsonl")
    ids = [d["_id"] for d in docs]
    texts = [f"{d['title']} {d['text']}" for d in docs]
    relevant = [set(q["relevant"]) for q in queries]
    qtexts = [q["text"] for q in queries]

    WORK.mkdir(exist_ok=True)
    embedder = CachedEmbedder(MiniLMEmbedder(Settings().models_dir), WORK / "embeddings.db")
    store = sqlite_store(WORK / "scifact.db", embedder)
    store.upsert(
        "scifact",
        (Record(d["_id"], t, {"title": d["title"]}) for d, t in zip(docs, texts, strict=True)),
    )
    doc_vecs = embedder.embed(texts)
    q_vecs = embedder.embed(qtexts)

    def score(rankings: list[list[str]]) -> float:
        return float(
            np.mean([ndcg_at_10(r, rel) for r, rel in zip(rankings, relevant, strict=True)])
        )

    rows = []
    # Plain baselines.
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords=list(STOPWORDS), stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    tokens = bm25s.tokenize(qtexts, stopwords=list(STOPWORDS), stemmer=stemmer, show_progress=False)
    found, scores = retriever.retrieve(tokens, k=100, show_progress=False)
    bm25_lists = [
        [(ids[j], float(s)) for j, s in zip(row, srow, strict=True)]
        for row, srow in zip(found, scores, strict=True)
    ]
    dense_lists = [_rank(doc_vecs @ q, ids, 100) for q in q_vecs]
    rows.append(
        ("bm25s, stemmed (plain library)", score([[d for d, _ in r] for r in bm25_lists]), "-")
    )
    rows.append(
        ("dense MiniLM, brute force (plain)", score([[d for d, _ in r] for r in dense_lists]), "-")
    )
    rows.append(
        (
            "RRF k=60 of the two (plain)",
            score([rrf([a, b]) for a, b in zip(bm25_lists, dense_lists, strict=True)]),
            "-",
        )
    )
    rows.append(
        (
            "relative-score fusion (LlamaIndex's method)",
            score([relative_score([a, b]) for a, b in zip(bm25_lists, dense_lists, strict=True)]),
            "-",
        )
    )
    # Heron.
    for mode in ("lexical", "dense", "hybrid"):
        store.search_many("scifact", qtexts[:5], mode=mode, vectors=q_vecs[:5])  # warm the index
        samples, rankings = [], []
        for text, vec in zip(qtexts, q_vecs, strict=True):
            start = time.perf_counter()
            hits = store.search("scifact", text, mode=mode, vector=vec, top_k=10)
            samples.append(time.perf_counter() - start)
            rankings.append([h.id for h in hits])
        rows.append((f"heron {mode}", score(rankings), percentiles(samples)[0]))
    store.close()
    return table(
        "SciFact test (300 queries), nDCG@10", ["method", "nDCG@10", "p50 ms / query"], rows
    )


if __name__ == "__main__":
    run()
