"""SQLite against PostgreSQL on SciFact test (300 claims): overlap@10 and nDCG@10 per mode.

Both stores get the same records with the same (cached) vectors; the PostgreSQL server is
``HERON_DATABASE_URL`` if it names one, else a local one that ``scripts/postgres`` starts
under .bench/postgres (and leaves running for the next benchmark).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
import psycopg

from bench.common import SCIFACT, WORK, ndcg_at_10, percentiles, read_jsonl, table
from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import Record
from heron.store.parity import parity
from tests.conftest import sqlite_store
from tests.postgres import postgres_store

ROOT = Path(__file__).resolve().parents[1]


def postgres_url(database: str) -> str:
    """A URL of ``database`` on the benchmark's server, created empty if it is missing."""
    url = Settings().postgres_url
    if url is None:
        started = subprocess.run(
            [ROOT / "scripts" / "postgres", "start", WORK / "postgres"],
            check=True,
            capture_output=True,
            text=True,
        )
        url = started.stdout.strip()
    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{database}"')
    return url.rsplit("/", 1)[0] + "/" + database


def run() -> str:
    docs = read_jsonl(SCIFACT / "corpus.jsonl")
    queries = read_jsonl(SCIFACT / "queries-test.jsonl")
    texts = [q["text"] for q in queries]
    relevant = [set(q["relevant"]) for q in queries]
    records = [Record(d["_id"], f"{d['title']} {d['text']}", {"title": d["title"]}) for d in docs]

    WORK.mkdir(exist_ok=True)
    embedder = CachedEmbedder(MiniLMEmbedder(Settings().models_dir), WORK / "embeddings.db")
    sqlite = sqlite_store(WORK / "scifact.db", embedder)
    sqlite.upsert("scifact", records)
    postgres = postgres_store(
        postgres_url(os.environ.get("HERON_BENCH_PG_DB", "scifact")), embedder
    )
    start = time.perf_counter()
    postgres.upsert("scifact", records)
    load = time.perf_counter() - start

    report = parity(sqlite, postgres, "scifact", texts, top_k=10)
    vectors = embedder.embed(texts)
    rows = []
    for mode in ("dense", "lexical", "hybrid"):
        quality, latency = [], []
        for store in (sqlite, postgres):
            store.search_many("scifact", texts[:5], mode=mode, vectors=vectors[:5])  # warm up
            samples, found = [], []
            for text, vector in zip(texts, vectors, strict=True):
                began = time.perf_counter()
                hits = store.search("scifact", text, mode=mode, vector=vector, top_k=10)
                samples.append(time.perf_counter() - began)
                found.append([h.id for h in hits])
            ndcg = [ndcg_at_10(r, rel) for r, rel in zip(found, relevant, strict=True)]
            quality.append(float(np.mean(ndcg)))
            latency.append(percentiles(samples)[0])
        rows.append(
            (
                mode,
                report.overlap[mode],
                report.same_order[mode],
                quality[0],
                quality[1],
                latency[0],
                latency[1],
            )
        )
    sqlite.close()
    postgres.close()
    return table(
        f"SciFact test ({len(texts)} queries), SQLite vs PostgreSQL+pgvector "
        f"(PostgreSQL load of {len(records)} records, vectors cached: {load:.1f} s)",
        [
            "mode",
            "overlap@10",
            "same top 10",
            "nDCG@10 SQLite",
            "nDCG@10 PostgreSQL",
            "p50 ms SQLite",
            "p50 ms PostgreSQL",
        ],
        rows,
    )


if __name__ == "__main__":
    run()
