"""Store search latency on 2 cores, and HNSW recall against exact search.

Vectors: real MiniLM embeddings of the SciFact abstracts, each copied with Gaussian
noise (cosine about 0.85 to its source) until there are N of them; texts: SciFact
sentences, so the lexical side sees real word statistics. Queries: the 300 SciFact test
claims, embedded for real. Latency is measured through ``SQLiteStore.search`` with the
query vector given (query embedding is timed separately) and one thread per query.
"""

from __future__ import annotations

import re
import time

import numpy as np

from bench.common import SCIFACT, WORK, percentiles, read_jsonl, table
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import Record, SQLiteStore
from tests.conftest import sqlite_store


def corpus_vectors(embedder: CachedEmbedder) -> tuple[list[str], np.ndarray]:
    docs = read_jsonl(SCIFACT / "corpus.jsonl")
    texts = [f"{d['title']} {d['text']}" for d in docs]
    return texts, embedder.embed(texts)


def synthetic(base: np.ndarray, n: int, seed: int = 0, noise: float = 0.035) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        parents = rng.integers(0, len(base), stop - start)
        block = (
            base[parents]
            + rng.standard_normal((stop - start, base.shape[1])).astype(np.float32) * noise
        )
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def sentences(texts: list[str], n: int) -> list[str]:
    pieces = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s) > 20]
    return [pieces[i % len(pieces)] for i in range(n)]


def build(path_name: str, vectors: np.ndarray, texts: list[str]) -> SQLiteStore:
    embedder = MiniLMEmbedder(Settings().models_dir)
    path = WORK / path_name
    store = sqlite_store(path, embedder)
    if "bench" not in [ns.name for ns in store.namespaces()] or store.count("bench") != len(
        vectors
    ):
        print(f"loading {len(vectors)} records into {path} ...", flush=True)
        store.upsert(
            "bench", (Record(f"r{i}", texts[i], {}, vector=vectors[i]) for i in range(len(vectors)))
        )
    return store


def latency(
    store: SQLiteStore, mode: str, queries: list[str], qvecs: np.ndarray
) -> tuple[float, float]:
    store.search("bench", queries[0], mode=mode, vector=qvecs[0])  # builds or loads the index
    samples = []
    for text, vec in zip(queries, qvecs, strict=True):
        start = time.perf_counter()
        store.search("bench", text, mode=mode, vector=vec, top_k=10)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def recall_at_10(store: SQLiteStore, vectors: np.ndarray, qvecs: np.ndarray) -> float:
    found = 0
    for vec in qvecs:
        exact = set(np.argpartition(-(vectors @ vec), 10)[:10].tolist())
        hits = store.search("bench", "", mode="dense", vector=vec, top_k=10)
        found += len(exact & {int(h.id[1:]) for h in hits})
    return found / (10 * len(qvecs))


def run(sizes: tuple[int, ...] = (100_000, 1_000_000)) -> str:
    settings = Settings()
    WORK.mkdir(exist_ok=True)
    embedder = CachedEmbedder(MiniLMEmbedder(settings.models_dir), WORK / "embeddings.db")
    texts, base = corpus_vectors(embedder)
    queries = [q["text"] for q in read_jsonl(SCIFACT / "queries-test.jsonl")]
    qvecs = embedder.embed(queries)
    start = time.perf_counter()
    embedder.inner.embed(queries[:100])
    embed_ms = (time.perf_counter() - start) / 100 * 1000
    rows = []
    for n in sizes:
        vectors = synthetic(base, n)
        store = build(f"latency-{n}.db", vectors, sentences(texts, n))
        modes = ("dense", "lexical", "hybrid") if n <= 100_000 else ("dense",)
        recall = recall_at_10(store, vectors, qvecs[:100])
        for mode in modes:
            p50, p95 = latency(store, mode, queries, qvecs)
            rows.append((f"{n:,}", mode, p50, p95, recall if mode == "dense" else "-"))
        store.close()
    rows.append(("-", "query embedding alone", embed_ms, "-", "-"))
    return table(
        "Search latency (ms, top 10, 300 SciFact queries, one query at a time)",
        ["records", "mode", "p50 ms", "p95 ms", "dense recall@10 vs exact"],
        rows,
    )


if __name__ == "__main__":
    run()
