"""Libraries on the Kubernetes docs (885 pages): index time, question quality, latency.

The library is copied to ``.bench/books/library`` (so one page can be edited) and
indexed into ``.bench/books/home`` with a cold embedding cache. The initial index is
timed once, right after the plain baseline in the same run, and both figures are kept in
``timing.json``; delete ``.bench/books`` to measure them again (about 11 minutes on 2
cores). The plain baseline is what a user writes from the usual RAG tutorial: each file's
raw text cut into 1,000-character windows overlapping by 200, embedded in file order
with a default onnxruntime session (``bench.embed_throughput.plain_onnxruntime``).

Questions: ``questions.jsonl``, tuned on ``dev``, reported on ``test``; the gold is a
page, and a hit is the gold page among the first 1 or 5 grouped results. Baselines
(plain BM25, plain dense, reciprocal rank fusion) run on the same chunks in the same
run, ranked by their best chunk per page.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import SHARED, WORK, percentiles, read_jsonl, table, timed
from bench.embed_throughput import plain_onnxruntime
from heron.embed import load_embedder
from heron.libraries import add_library, index_library, load_reranker, search_many
from heron.libraries.markdown import outline
from heron.libraries.scan import read_page, scan
from heron.libraries.search import group_by_page
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.store.fusion import reciprocal_rank_fusion
from tests.conftest import sqlite_store

K8S = SHARED / "data" / "docs" / "kubernetes"
ROOT = WORK / "books"
LIBRARY = "kubernetes"
EDITED = "concepts/storage/volumes.md"
WINDOW, OVERLAP = 1000, 200  # the plain baseline's character windows


def _setup() -> tuple[Settings, SQLiteStore]:
    settings = Settings(home=ROOT / "home")
    return settings, sqlite_store(settings.db_path, load_embedder(settings))


def plain_windows(root: Path) -> list[str]:
    """Every ``.md`` file's raw text in overlapping character windows, files in path order."""
    texts = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        starts = range(0, max(len(text) - OVERLAP, 1), WINDOW - OVERLAP)
        texts += [text[i : i + WINDOW] for i in starts]
    return texts


def initial_index() -> dict:
    """Index from scratch once, after the plain baseline; later runs read the figures."""
    timing = ROOT / "timing.json"
    if timing.exists():
        return json.loads(timing.read_text())
    shutil.rmtree(ROOT, ignore_errors=True)
    shutil.copytree(K8S / "library", ROOT / "library")
    windows = plain_windows(ROOT / "library")
    _, plain_seconds = timed(lambda: plain_onnxruntime(windows))
    settings, store = _setup()
    add_library(LIBRARY, str(ROOT / "library"), settings)
    figures = timed_index(LIBRARY, store, settings)
    figures.update(plain_seconds=plain_seconds, plain_chunks=len(windows))
    timing.write_text(json.dumps(figures))
    return figures


def timed_index(library: str, store: SQLiteStore, settings: Settings) -> dict:
    """Index ``library`` into ``store``, timed: the figures the library benches record."""
    start = time.perf_counter()
    report = index_library(library, store, settings=settings)
    return {
        "seconds": time.perf_counter() - start,
        "pages": report.pages,
        "records": report.records,
        "embedded": report.embedded,
    }


def reindex_rows(store: SQLiteStore, settings: Settings) -> list[tuple]:
    rows = []
    report = index_library(LIBRARY, store, settings=settings)
    rows.append(("re-index, nothing changed", report.seconds, report.changed, report.embedded))
    page = ROOT / "library" / EDITED
    original = page.read_text(encoding="utf-8")
    try:
        page.write_text(
            original.replace(
                "## Background",
                "## Background\n\nA volume outlives the containers of its Pod.\n",
                1,
            ),
            encoding="utf-8",
        )
        report = index_library(LIBRARY, store, settings=settings)
        rows.append(("re-index, one page edited", report.seconds, report.changed, report.embedded))
    finally:
        page.write_text(original, encoding="utf-8")
        index_library(LIBRARY, store, settings=settings)
    return rows


def anchors(root: Path) -> tuple[int, int, int]:
    """``(pages, section anchors, anchors repeating an earlier one on their page)``: a
    repeated anchor sends a citation to the wrong section."""
    pages = total = repeated = 0
    for file in scan(root, 10_000_000)[0]:
        page = read_page(file, 10_000_000)[0]
        if page is None:
            continue
        found = [h.anchor for h in outline(page.lines).headings]
        pages, total = pages + 1, total + len(found)
        repeated += len(found) - len(set(found))
    return pages, total, repeated


def _metrics(ranked: list[list[str]], gold: list[str]) -> tuple[float, float, float]:
    hit1 = np.mean([g in r[:1] for r, g in zip(ranked, gold, strict=True)])
    hit5 = np.mean([g in r[:5] for r, g in zip(ranked, gold, strict=True)])
    pairs = zip(ranked, gold, strict=True)
    mrr = np.mean([1 / (r[:10].index(g) + 1) if g in r[:10] else 0.0 for r, g in pairs])
    return float(hit1), float(hit5), float(mrr)


def _rrf_pages(store: SQLiteStore, queries: list[str]) -> list[list[str]]:
    """Plain reciprocal rank fusion of the store's dense and lexical chunk lists."""
    vectors = store.embedder.embed(queries)
    dense = store.search_many(LIBRARY, queries, mode="dense", top_k=100, vectors=vectors)
    lexical = store.search_many(LIBRARY, queries, mode="lexical", top_k=100)
    ranked = []
    for d, lx in zip(dense, lexical, strict=True):
        by_id = {h.id: h for h in d + lx}
        keys = {hid: n for n, hid in enumerate(by_id)}
        fused = reciprocal_rank_fusion(
            np.array([keys[h.id] for h in d]),
            np.array([h.score for h in d]),
            np.array([keys[h.id] for h in lx]),
            np.array([h.score for h in lx]),
            top_k=100,
        )
        ids = list(by_id)
        hits = [by_id[ids[f.key]] for f in fused]
        scores = np.array([f.score for f in fused], dtype=np.float32)
        ranked.append([r.page for r in group_by_page(hits, scores, {})])
    return ranked


def quality(store: SQLiteStore, settings: Settings, split: str = "test") -> list[tuple]:
    questions = [q for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == split]
    kinds = {
        "precise": ([q["question"] for q in questions], [q["page"] for q in questions]),
        "vague": (
            [v for q in questions for v in q["vague"]],
            [q["page"] for q in questions for _ in q["vague"]],
        ),
    }
    rows = []
    for kind, (texts, gold) in kinds.items():
        gold = [g.removesuffix(".md") for g in gold]
        runs = {"plain RRF (baseline)": _rrf_pages(store, texts)}
        for mode in ("lexical", "dense", "hybrid", "full"):
            results = search_many(
                texts, store, library=LIBRARY, top_k=10, mode=mode, settings=settings
            )
            runs[mode] = [[r.page for r in rs] for rs in results]
        for name, ranked in runs.items():
            rows.append((kind, name, *_metrics(ranked, gold)))
    return rows


def latency(store: SQLiteStore, settings: Settings) -> tuple[float, float]:
    """Each query embedded by the model, not answered from the embedding cache."""
    uncached = load_embedder(
        settings.model_copy(update={"embed": settings.embed.model_copy(update={"cache": False})})
    )
    store = sqlite_store(settings.db_path, uncached)
    questions = [q["question"] for q in read_jsonl(K8S / "questions.jsonl")]
    options = {
        "library": LIBRARY,
        "settings": settings,
        "reranker": load_reranker(settings.library),
    }
    search_many(questions[:1], store, **options)  # loads the vector index
    samples = []
    for text in questions:
        start = time.perf_counter()
        search_many([text], store, top_k=10, **options)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def run(split: str = "test") -> str:
    first = initial_index()
    settings, store = _setup()
    out = table(
        "Kubernetes library: indexing (885 pages, 2 cores)",
        ["run", "seconds", "pages re-indexed", "texts embedded"],
        [
            (
                "plain chunk-and-embed (baseline)",
                first["plain_seconds"],
                first["pages"],
                first["plain_chunks"],
            ),
            ("initial index (cold cache)", first["seconds"], first["pages"], first["embedded"]),
            *reindex_rows(store, settings),
        ],
    )
    out += table(
        "Kubernetes library: section anchors",
        ["pages", "anchors", "repeating an earlier one"],
        [anchors(ROOT / "library")],
    )
    out += table(
        f"Kubernetes questions ({split} split): page Hit@1 / Hit@5 / MRR@10",
        ["questions", "search", "Hit@1", "Hit@5", "MRR@10"],
        quality(store, settings, split),
    )
    p50, p95 = latency(store, settings)
    out += table(
        "Kubernetes library: search latency (full search, query embedding included)",
        ["p50 ms", "p95 ms"],
        [(p50, p95)],
    )
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["index"]:
        print(initial_index())
    else:
        run(*sys.argv[1:])
