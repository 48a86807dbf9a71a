"""Held-out libraries set: the Next.js docs, indexed with MiniLM and with e5, never tuned on.

**Source.** The ``next`` npm package, version ``VERSION`` (MIT, ``license.md`` in the
package), ships the App Router documentation as Markdown under ``dist/docs/01-app``. Three
of its folders become the library's collections (``FOLDERS``): ``getting-started`` (19
pages), ``guides`` (the 63 pages directly in ``02-guides``; its sub-folders migrating,
testing, upgrading and client-side-data-fetching are left out) and ``file-conventions``
(``03-api-reference/03-file-conventions``, 36 pages with its metadata and route segment
config sub-folders): 118 pages, about 2,700 MiniLM chunks and 1,800 e5 chunks. The rest
of the API reference (functions, config, components) and the Pages Router docs are left
out to keep the e5 index to minutes on 2 cores. They are copied to ``ROOT / "library"``.

**Questions** (``bench/data/heldout_docs.jsonl``, 40 of them: 9 getting-started, 19
guides, 12 file-conventions) were written by hand from reading the pages, before any
search was run over them, and are never tuned on. Each has a gold page (``page``, as
Heron reports it: ``collection/path`` without ``.md``), any other page that answers it
as well (``also``; 5 questions have one), a ``question`` as a user who knows Next.js's
terms asks it, and one ``vague`` rewrite, by a user who does not know the page's key
terms (no API, file or option names). A hit is any gold page among the first 1 or 5
grouped results.

**Run.** Each model gets its own bench home (``ROOT / "minilm"``, ``ROOT / "e5"``) with
its own, cold, embedding cache; the first index of each is timed and kept in
``timing.json`` with a digest of the library, so later runs re-index (nothing changed,
under a second) and only search. A change to the copied pages, or deleting ``ROOT``,
re-times both. Reported: index seconds per model and the e5/MiniLM ratio; page Hit@1 /
Hit@5 for precise and vague questions in the four modes of ``heron.libraries.search``;
each fused ranking that falls below its best part at Hit@5 (hybrid against dense and
lexical, full against hybrid); full search p50 / p95 with each query embedded by the
model itself (no cache).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from bench.common import WORK, percentiles, read_jsonl, table
from bench.libraries import timed_index
from bench.packages import npm
from heron.embed import load_embedder
from heron.libraries import add_library, index_library, load_reranker, search_many
from heron.libraries.search import MODES
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.conftest import sqlite_store

VERSION = "16.4.6"
ROOT = WORK / "heldout-docs"
LIBRARY = "nextjs"
QUESTIONS = Path(__file__).parent / "data" / "heldout_docs.jsonl"
#: collection -> (folder under ``dist/docs/01-app``, whether its sub-folders are kept)
FOLDERS = {
    "getting-started": ("01-getting-started", True),
    "guides": ("02-guides", False),
    "file-conventions": ("03-api-reference/03-file-conventions", True),
}
MODELS = ("minilm", "e5")
#: Each fused ranking and the parts it must not fall below at Hit@5.
PARTS = {"hybrid": ("dense", "lexical"), "full": ("hybrid",)}


def library() -> Path:
    """The three collections, copied from the npm package once."""
    target = ROOT / "library"
    if target.is_dir():
        return target
    docs = npm("next", VERSION) / "dist" / "docs" / "01-app"
    partial = target.with_name("library.partial")
    shutil.rmtree(partial, ignore_errors=True)
    for collection, (folder, nested) in FOLDERS.items():
        source = docs / folder
        if nested:
            shutil.copytree(source, partial / collection)
        else:
            (partial / collection).mkdir(parents=True)
            for page in sorted(source.glob("*.md")):
                shutil.copy(page, partial / collection / page.name)
    partial.rename(target)
    return target


def digest(root: Path) -> str:
    """The library's pages and their text: a changed page means a new first index."""
    sha = hashlib.sha256()
    for path in sorted(root.rglob("*.md")):
        sha.update(path.relative_to(root).as_posix().encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()


def settings_for(model: str) -> Settings:
    return Settings(home=ROOT / model, embed={"embedder": model})


def built(model: str, root: Path) -> tuple[SQLiteStore, dict]:
    """The model's index of the library; the first index from a cold cache is timed."""
    settings = settings_for(model)
    timing = settings.home / "timing.json"
    figures = json.loads(timing.read_text()) if timing.exists() else {}
    if figures.get("digest") != digest(root):
        shutil.rmtree(settings.home, ignore_errors=True)
        settings.home.mkdir(parents=True)
        add_library(LIBRARY, str(root), settings)
        store = sqlite_store(settings.db_path, load_embedder(settings))
        load = os.getloadavg()[0]
        figures = timed_index(LIBRARY, store, settings)
        figures.update(load_before=load, load_after=os.getloadavg()[0], digest=digest(root))
        timing.write_text(json.dumps(figures))
        return store, figures
    store = sqlite_store(settings.db_path, load_embedder(settings))
    index_library(LIBRARY, store, settings=settings)  # nothing changed: reads states only
    return store, figures


def question_sets() -> dict[str, tuple[list[str], list[set[str]]]]:
    questions = read_jsonl(QUESTIONS)
    gold = [{q["page"], *q["also"]} for q in questions]
    return {
        "precise": ([q["question"] for q in questions], gold),
        "vague": (
            [v for q in questions for v in q["vague"]],
            [g for q, g in zip(questions, gold, strict=True) for _ in q["vague"]],
        ),
    }


def hits(ranked: list[list[str]], gold: list[set[str]], k: int) -> float:
    return float(np.mean([bool(g & set(r[:k])) for r, g in zip(ranked, gold, strict=True)]))


def quality(model: str, store: SQLiteStore) -> list[tuple]:
    """One row per question kind and mode; a fused mode below its best part is marked."""
    settings = settings_for(model)
    rows = []
    for kind, (texts, gold) in question_sets().items():
        at: dict[str, tuple[float, float]] = {}
        for mode in MODES:
            results = search_many(
                texts, store, library=LIBRARY, top_k=10, mode=mode, settings=settings
            )
            ranked = [[r.page for r in found] for found in results]
            at[mode] = (hits(ranked, gold, 1), hits(ranked, gold, 5))
        for mode in MODES:
            parts = PARTS.get(mode, ())
            best = max(parts, key=lambda p: at[p][1]) if parts else None
            below = best is not None and at[mode][1] < at[best][1]
            mark = f"BELOW {best} ({at[best][1]:.3f})" if below else ""
            rows.append((model, kind, mode, *at[mode], mark))
    return rows


def latency(model: str) -> tuple[float, float]:
    """Full search, one precise question at a time, each embedded by the model (no cache)."""
    settings = settings_for(model)
    uncached = load_embedder(
        settings.model_copy(update={"embed": settings.embed.model_copy(update={"cache": False})})
    )
    store = sqlite_store(settings.db_path, uncached)
    texts = question_sets()["precise"][0]
    options = {
        "library": LIBRARY,
        "settings": settings,
        "reranker": load_reranker(settings.library),
    }
    search_many(texts[:1], store, **options)  # loads the vector index
    samples = []
    for text in texts:
        start = time.perf_counter()
        search_many([text], store, top_k=10, **options)
        samples.append(time.perf_counter() - start)
    store.close()
    return percentiles(samples)


def run() -> str:
    root = library()
    index_rows, quality_rows, latency_rows = [], [], []
    seconds = {}
    for model in MODELS:
        store, figures = built(model, root)
        seconds[model] = figures["seconds"]
        index_rows.append(
            (
                model,
                figures["pages"],
                figures["records"],
                figures["embedded"],
                figures["seconds"],
                f"{figures['load_before']:.1f} / {figures['load_after']:.1f}",
            )
        )
        quality_rows += quality(model, store)
        store.close()
        latency_rows.append((model, *latency(model)))
    ratio = seconds["e5"] / seconds["minilm"]
    out = table(
        f"Held-out library: Next.js {VERSION} docs, first index from a cold cache "
        f"(e5 / MiniLM: {ratio:.2f}x)",
        ["model", "pages", "chunks", "embedded", "seconds", "load average before / after"],
        index_rows,
    )
    out += table(
        f"Held-out library: page Hit@1 / Hit@5 ({len(read_jsonl(QUESTIONS))} questions); "
        "fused rankings below their best part at Hit@5 marked",
        ["model", "questions", "mode", "Hit@1", "Hit@5", "fused below best part"],
        quality_rows,
    )
    return out + table(
        "Held-out library: full search latency, query embedded by the model",
        ["model", "p50 ms", "p95 ms"],
        latency_rows,
    )


if __name__ == "__main__":
    run()
