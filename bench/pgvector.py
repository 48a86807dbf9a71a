"""pgvector HNSW in the PostgreSQL store: build time, dense latency, recall@10 vs exact.

The vectors and texts of ``bench.search_latency`` (SciFact embeddings copied with noise,
SciFact sentences). Records are loaded through ``PostgresStore.upsert`` with the index
dropped, then the index is built once with the DDL the store uses
(``hnsw_index_sql``), ``maintenance_work_mem`` 4 GB: bulk building is much faster than
growing the graph one insert at a time. Sizes: ``HERON_BENCH_PG_SIZES``
(comma-separated), default 100000,1000000.
"""

from __future__ import annotations

import os
import time

import numpy as np
import psycopg

from bench.common import SCIFACT, WORK, read_jsonl, table
from bench.parity import postgres_url
from bench.search_latency import corpus_vectors, latency, recall_at_10, sentences, synthetic
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import Record
from heron.store.postgres import HNSW_EF_CONSTRUCTION, HNSW_M, PostgresStore, hnsw_index_sql
from heron.store.schema import EF_SEARCH
from tests.postgres import postgres_store


def build(n: int, store: PostgresStore, texts: list[str], base: np.ndarray) -> float | None:
    """Load ``n`` records unless they are there; the index build's seconds, None if kept."""
    names = {ns.name: ns.count for ns in store.namespaces()}
    if names.get("bench") == n:
        return None
    if "bench" in names:
        store.drop("bench")
    vectors = synthetic(base, n)
    texts = sentences(texts, n)
    store.upsert("bench", [Record("r0", texts[0], {}, vector=vectors[0])])
    with psycopg.connect(store.url, autocommit=True) as conn:
        (ns_id,) = conn.execute("SELECT id FROM heron_namespaces WHERE name = 'bench'").fetchone()
        conn.execute(f"DROP INDEX heron_records_hnsw_{ns_id}")
    print(f"loading {n} records into {store.where} ...", flush=True)
    store.upsert("bench", (Record(f"r{i}", texts[i], {}, vector=vectors[i]) for i in range(n)))
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '4GB'")
        start = time.perf_counter()
        conn.execute(hnsw_index_sql(ns_id, vectors.shape[1]))
        return time.perf_counter() - start


def run() -> str:
    sizes = [int(s) for s in os.environ.get("HERON_BENCH_PG_SIZES", "100000,1000000").split(",")]
    WORK.mkdir(exist_ok=True)
    embedder = CachedEmbedder(MiniLMEmbedder(Settings().models_dir), WORK / "embeddings.db")
    texts, base = corpus_vectors(embedder)
    queries = [q["text"] for q in read_jsonl(SCIFACT / "queries-test.jsonl")]
    qvecs = embedder.embed(queries)
    rows = []
    for n in sizes:
        store = postgres_store(postgres_url(f"pgvector_{n}"), embedder)
        seconds = build(n, store, texts, base)
        recall = recall_at_10(store, synthetic(base, n), qvecs[:100])
        p50, p95 = latency(store, "dense", queries, qvecs)
        rows.append((f"{n:,}", "-" if seconds is None else f"{seconds:.0f}", p50, p95, recall))
        store.close()
    return table(
        f"pgvector HNSW (m={HNSW_M}, ef_construction={HNSW_EF_CONSTRUCTION}, "
        f"ef_search={EF_SEARCH}), dense top 10, 300 SciFact queries one at a time",
        ["records", "index build s", "p50 ms", "p95 ms", "recall@10 vs exact"],
        rows,
    )


if __name__ == "__main__":
    run()
