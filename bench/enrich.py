"""Q&A extraction on a sample of the Kubernetes library, by the local model (SmolLM2-135M).

The local model takes one to two minutes a page on 2 shared cores, so this runs on a
sample: the gold pages of the first ``N`` test questions (``questions.jsonl``) and as many
other pages chosen at random (seed 0) are asked for their questions; the library indexed
is those pages plus more random ones, ``PAGES`` in all, so a question still has to find
its page among others that have questions and others that have none. Hit@5 (precise and
vague questions, the default full search) is measured on the index without questions,
then again once the generated caches are in (``heron index`` reads them: no model call).
That a second ``heron index --enrich`` makes no model call is asserted by
``tests/libraries/test_cli.py``. ``python -m bench enrich`` (``HERON_BENCH_ENRICH_N``:
questions sampled, default 8).
"""

from __future__ import annotations

import os
import random
import shutil
import time

from bench.common import WORK, read_jsonl, table
from bench.libraries import K8S
from heron.embed import load_embedder
from heron.errors import HeronError
from heron.libraries import add_library, index_library, search_many
from heron.libraries.enrich import write_cache
from heron.libraries.parse import parse_page
from heron.llm import load_broker
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.wiring import library_enricher
from tests.conftest import sqlite_store

ROOT = WORK / "enrich"
NAME = "k8s-sample"
PAGES = 60


def _sample(n: int) -> tuple[list[dict], list[str], list[str]]:
    """``(questions, pages asked, pages indexed)``, page ids without ``.md``."""
    questions = [q for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == "test"][:n]
    gold = list(dict.fromkeys(q["page"].removesuffix(".md") for q in questions))
    every = sorted(
        p.relative_to(K8S / "library").with_suffix("").as_posix()
        for p in (K8S / "library").rglob("*.md")
    )
    others = [p for p in every if p not in gold]
    random.Random(0).shuffle(others)
    asked = gold + others[: len(gold)]
    return questions, asked, gold + others[: max(PAGES - len(gold), len(gold))]


def _hits(store: SQLiteStore, settings: Settings, questions: list[dict]) -> list[float]:
    out = []
    for texts, gold in (
        ([q["question"] for q in questions], [q["page"] for q in questions]),
        (
            [v for q in questions for v in q["vague"]],
            [q["page"] for q in questions for _ in q["vague"]],
        ),
    ):
        found = search_many(texts, store, library=NAME, top_k=5, settings=settings)
        pages = [[r.page for r in rs] for rs in found]
        out.append(
            sum(g.removesuffix(".md") in p for p, g in zip(pages, gold, strict=True)) / len(gold)
        )
    return out


def run() -> str:
    n = int(os.environ.get("HERON_BENCH_ENRICH_N", "8"))
    questions, asked, indexed = _sample(n)
    shutil.rmtree(ROOT, ignore_errors=True)
    library = ROOT / "library"
    for page in indexed:
        (library / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(K8S / "library" / f"{page}.md", library / f"{page}.md")
    settings = Settings(home=ROOT / "home", library={"default_docs": False})
    store = sqlite_store(settings.db_path, load_embedder(settings))
    add_library(NAME, str(library), settings)
    plain = index_library(NAME, store, settings=settings)
    before = _hits(store, settings, questions)
    broker = load_broker(settings)
    enricher = library_enricher(settings, broker)
    calls, failures, generated, seconds = 0, 0, 0, 0.0
    for page_id in asked:
        page = parse_page((library / f"{page_id}.md").read_text(encoding="utf-8"), page_id)
        start = time.perf_counter()
        try:
            pairs = enricher.questions(page)
        except HeronError as exc:
            failures, pairs = failures + 1, []
            print(f"  {page_id}: {exc}")
        seconds += time.perf_counter() - start
        calls += 1
        generated += len(pairs)
        for pair in pairs:
            print(f"  {page_id}: {pair.question}")
        if pairs:
            write_cache(library, page, pairs, enricher.model_id)
    broker.close()
    enriched = index_library(NAME, store, settings=settings)  # reads the caches: no call
    after = _hits(store, settings, questions)
    out = table(
        f"Q&A extraction, {enricher.model_id}, {len(questions)} test questions "
        f"({len(questions) * 2} vague), {len(indexed)} pages indexed, {len(asked)} asked",
        ["index", "precise Hit@5", "vague Hit@5", "questions", "model calls", "seconds"],
        [
            ("without questions", before[0], before[1], 0, 0, round(plain.seconds, 1)),
            ("with generated questions", after[0], after[1], generated, calls, round(seconds, 1)),
        ],
    )
    print(
        f"{failures} of {len(asked)} pages gave no usable question; re-indexed with the "
        f"caches in {enriched.seconds:.1f} s, {enriched.model_calls} model calls"
    )
    return out


if __name__ == "__main__":
    run()
