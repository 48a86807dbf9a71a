"""Which vector index for the embedded store? Exact NumPy, faiss and usearch side by side.

Same vectors and queries as ``search_latency`` (synthetic around real MiniLM vectors),
one query at a time on one thread, top 10, recall against exact search.
"""

from __future__ import annotations

import time

import numpy as np

from bench.common import SCIFACT, WORK, percentiles, read_jsonl, table
from bench.search_latency import corpus_vectors, synthetic
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store.vectors import ExactIndex, HnswIndex


def _measure(search, qvecs: np.ndarray, truth: list[set[int]]) -> tuple[float, float, float]:
    samples, found = [], 0
    for vec, exact in zip(qvecs, truth, strict=True):
        start = time.perf_counter()
        keys = search(vec)
        samples.append(time.perf_counter() - start)
        found += len(exact & {int(k) for k in keys})
    p50, p95 = percentiles(samples)
    return p50, p95, found / (10 * len(qvecs))


def run(n: int = 100_000) -> str:
    import faiss
    from usearch.index import Index

    faiss.omp_set_num_threads(1)
    WORK.mkdir(exist_ok=True)
    embedder = CachedEmbedder(MiniLMEmbedder(Settings().models_dir), WORK / "embeddings.db")
    _, base = corpus_vectors(embedder)
    qvecs = embedder.embed([q["text"] for q in read_jsonl(SCIFACT / "queries-test.jsonl")][:200])
    vectors = synthetic(base, n)
    keys = np.arange(n, dtype=np.int64)
    truth = [set(np.argpartition(-(vectors @ q), 10)[:10].tolist()) for q in qvecs]
    rows = []

    def add(name: str, build, search) -> None:
        start = time.perf_counter()
        index = build()
        built = time.perf_counter() - start
        rows.append((name, built, *_measure(lambda q: search(index, q), qvecs, truth)))

    def exact() -> ExactIndex:
        index = ExactIndex(vectors.shape[1])
        index.add(keys, vectors)
        return index

    add("numpy exact (ExactIndex)", exact, lambda i, q: i.search(q, 10)[0])

    def faiss_flat():
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        return index

    add("faiss IndexFlatIP", faiss_flat, lambda i, q: i.search(q[None], 10)[1][0])

    def faiss_hnsw():
        index = faiss.IndexHNSWFlat(vectors.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 128
        index.hnsw.efSearch = 96
        faiss.omp_set_num_threads(2)
        index.add(vectors)
        faiss.omp_set_num_threads(1)
        return index

    add("faiss HNSW f32 (M=16, ef=96)", faiss_hnsw, lambda i, q: i.search(q[None], 10)[1][0])

    for dtype in ("f32", "i8"):

        def usearch_hnsw(dtype: str = dtype):
            index = Index(
                ndim=vectors.shape[1],
                metric="ip",
                dtype=dtype,
                connectivity=16,
                expansion_add=128,
                expansion_search=96,
            )
            index.add(keys, vectors, threads=2)
            return index

        add(
            f"usearch HNSW {dtype} (M=16, ef=96)",
            usearch_hnsw,
            lambda i, q: i.search(q, 10, threads=1).keys,
        )

    def heron_hnsw() -> HnswIndex:
        index = HnswIndex(vectors.shape[1])
        index.add(keys, vectors)
        return index

    add("usearch HNSW f16 (HnswIndex, chosen)", heron_hnsw, lambda i, q: i.search(q, 10)[0])
    return table(
        f"Vector indexes, {n:,} x 384, 200 queries, 1 thread per query",
        ["index", "build s", "p50 ms", "p95 ms", "recall@10"],
        rows,
    )


if __name__ == "__main__":
    run()
