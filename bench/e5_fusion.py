"""What fusion gets out of the two embedding profiles, and where a fused ranking falls short.

1. ``modes``: every search mode on each model's own Kubernetes index (the libraries
   bench's MiniLM index, ``bench.e5``'s e5 index), the 97 test questions (precise and
   vague) and the 40 translated dev questions (en/pt/es), page Hit@1/3/5. A cell is
   marked where a fused mode (hybrid, full) falls below the better of its parts (dense,
   lexical) at Hit@3 or Hit@5.
2. ``known_terms``: a prototype, measured and not kept: the tool router's lexical weight
   (``heron.tools.router``: ``min(1, known / unknown)`` of the query's analysed terms
   against the index's vocabulary) carried into the store's hybrid fusion, on the same
   questions (patched in here, not in Heron).
3. ``scifact_fusion``: SciFact with the e5 profile's own fusion constants (``ALPHA``,
   ``ROCCHIO_BETA``, ``FEEDBACK_ALPHA``) chosen on the 809 train claims and measured on
   the 300 test claims, and two ensembles of both models (Heron's MiniLM hybrid plus e5's
   dense score; BM25 + MiniLM + e5), weights chosen on train.
4. ``chunks256``: the Kubernetes library indexed with e5 in MiniLM's 256-token chunks
   instead of e5's 512 (once, timed; ``HERON_LIBRARY_CHUNK_TOKENS=256``).

``python -m bench e5-fusion`` runs all four; ``python -m bench.e5_fusion modes`` one. The
e5 indexes take minutes to build on 2 cores the first time (``bench.e5``); the embedding
cache keeps every vector for reruns.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager

import numpy as np

import heron.store.sql as store_sql
from bench.common import SCIFACT, WORK, ndcg_at_10, read_jsonl, table, translated
from bench.e5 import K8S, K8S_E5_HOME, LIBRARY, e5_cache, k8s_e5_store, minilm_cache
from heron.embed import embed_queries
from heron.libraries import add_library, index_library, search_many
from heron.settings import Settings
from heron.store import SQLiteStore, fusion
from heron.store.analysis import query_terms
from tests.conftest import sqlite_store

MINILM_HOME = WORK / "answers" / "k8s"  # the answers bench's index: its settings name the library
E5_256_HOME = WORK / "e5" / "k8s-e5-256"
Questions = dict[str, tuple[list[str], list[str]]]


def questions() -> Questions:
    test = [q for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == "test"]
    sets = {
        "test precise": ([q["question"] for q in test], [q["page"] for q in test]),
        "test vague": (
            [v for q in test for v in q["vague"]],
            [q["page"] for q in test for _ in q["vague"]],
        ),
    }
    for lang, items in translated("kubernetes_dev").items():
        sets[f"dev 40 {lang}"] = ([q["question"] for q in items], [q["page"] for q in items])
    return {
        name: (texts, [g.removesuffix(".md") for g in gold]) for name, (texts, gold) in sets.items()
    }


def indexes() -> Iterator[tuple[str, SQLiteStore, Settings]]:
    """Each model's own Kubernetes index, opened in turn and closed after use."""
    minilm = Settings(home=MINILM_HOME)
    if not minilm.db_path.exists():
        raise SystemExit(f"No MiniLM Kubernetes index in {MINILM_HOME}: python -m bench answers")
    built, _ = k8s_e5_store()  # builds the e5 index the first time
    built.close()
    built.embedder.close()
    homes = (
        ("MiniLM", minilm, minilm_cache),
        ("e5", Settings(home=K8S_E5_HOME, embed={"embedder": "e5"}), e5_cache),
    )
    for label, settings, embedder_for in homes:
        embedder = embedder_for(settings)
        with closing(embedder), sqlite_store(settings.db_path, embedder) as store:
            yield label, store, settings


def hits(ranked: list[list[str]], gold: list[str]) -> tuple[float, float, float]:
    return tuple(
        float(np.mean([g in r[:k] for r, g in zip(ranked, gold, strict=True)])) for k in (1, 3, 5)
    )  # type: ignore[return-value]


def pages(store: SQLiteStore, settings: Settings, texts: list[str], mode: str) -> list[list[str]]:
    found = search_many(texts, store, library=LIBRARY, top_k=10, mode=mode, settings=settings)  # type: ignore[arg-type]
    return [[r.page for r in results] for results in found]


def below(fused: tuple[float, ...], parts: Sequence[tuple[float, ...]]) -> str:
    """``@3``/``@5`` where ``fused`` is under the best part."""
    marks = [f"@{k}" for i, k in ((1, 3), (2, 5)) if fused[i] < max(p[i] for p in parts) - 1e-9]
    return "below at " + " ".join(marks) if marks else ""


def modes() -> str:
    rows = []
    sets = questions()
    for label, store, settings in indexes():
        for name, (texts, gold) in sets.items():
            got = {m: hits(pages(store, settings, texts, m), gold) for m in ("lexical", "dense")}
            for mode in ("lexical", "dense", "hybrid", "full"):
                if mode not in got:
                    got[mode] = hits(pages(store, settings, texts, mode), gold)
                parts = [got["lexical"], got["dense"]]
                mark = below(got[mode], parts) if mode in ("hybrid", "full") else ""
                rows.append((label, name, mode, *got[mode], mark))
    return table(
        "Kubernetes, every mode on each model's own index: page Hit@1 / Hit@3 / Hit@5",
        ["index", "questions", "mode", "Hit@1", "Hit@3", "Hit@5", "fused below a part"],
        rows,
    )


def vocabulary(store: SQLiteStore, namespace: str) -> frozenset[str]:
    """The namespace's lexical terms, read through FTS5's vocabulary table."""
    with sqlite3.connect(store.path) as db:
        (ns_id,) = db.execute("SELECT id FROM namespaces WHERE name = ?", (namespace,)).fetchone()
        db.execute(f"CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, fts_{ns_id}, 'row')")
        return frozenset(term for (term,) in db.execute("SELECT term FROM temp.vocab"))


def known_weight(query: str, vocab: frozenset[str]) -> float:
    terms = query_terms(query)
    known = sum(term in vocab for term in terms)
    return 1.0 if known >= len(terms) - known else known / (len(terms) - known)


@contextmanager
def weighted_fusion(vocab: frozenset[str]) -> Iterator[None]:
    """The store's hybrid with its lexical side scaled by ``known_weight``: ``alpha`` and
    ``feedback_alpha`` renormalised so the lexical share is ``(1 - alpha) * w``."""
    plain = store_sql.SQLStore._hybrid

    def hybrid(self, scope, query, vector, top_k):  # type: ignore[no-untyped-def]
        w = known_weight(query, vocab)
        a, fa = fusion.ALPHA, fusion.FEEDBACK_ALPHA
        store_sql.fuse_with_feedback = functools.partial(
            fusion.fuse_with_feedback,
            alpha=a / (a + (1 - a) * w),
            feedback_alpha=fa / (fa + (1 - fa) * w),
        )
        try:
            return plain(self, scope, query, vector, top_k)
        finally:
            store_sql.fuse_with_feedback = fusion.fuse_with_feedback

    store_sql.SQLStore._hybrid = hybrid  # type: ignore[method-assign]
    try:
        yield
    finally:
        store_sql.SQLStore._hybrid = plain  # type: ignore[method-assign]


def known_terms() -> str:
    rows = []
    sets = questions()
    for label, store, settings in indexes():
        vocab = vocabulary(store, LIBRARY)
        for name, (texts, gold) in sets.items():
            mean_w = float(np.mean([known_weight(t, vocab) for t in texts]))
            for mode in ("hybrid", "full"):
                plain = hits(pages(store, settings, texts, mode), gold)
                with weighted_fusion(vocab):
                    weighted = hits(pages(store, settings, texts, mode), gold)
                rows.append((label, name, mean_w, mode, *plain, *weighted))
    return table(
        "Kubernetes: the store's fusion as it is, and with the lexical side scaled by the "
        "share of known query terms (prototype, not kept): Hit@1 / Hit@3 / Hit@5",
        ["index", "questions", "mean w", "mode", "@1", "@3", "@5", "w: @1", "w: @3", "w: @5"],
        rows,
    )


def _claims(split: str) -> tuple[list[str], list[set[str]]]:
    rows = read_jsonl(SCIFACT / f"queries-{split}.jsonl")
    return [q["text"] for q in rows], [set(q["relevant"]) for q in rows]


def _ndcg(rankings: Sequence[Sequence[str]], relevant: Sequence[set[str]]) -> float:
    pairs = zip(rankings, relevant, strict=True)
    return float(np.mean([ndcg_at_10(list(r), g) for r, g in pairs]))


#: (ALPHA, ROCCHIO_BETA, FEEDBACK_ALPHA) tried for the e5 profile; the first is Heron's.
CONSTANTS = [(0.5, 0.3, 0.75), (0.3, 0.3, 0.75), (0.7, 0.3, 0.75), (0.4, 0.3, 0.6),
             (0.5, 0.3, 0.5), (0.5, 0.3, 0.9), (0.5, 0.0, 0.5), (0.5, 0.5, 0.75)]  # fmt: skip


def _zscore(values: np.ndarray) -> np.ndarray:
    std = values.std()
    return (values - values.mean()) / std if std > 0 else np.zeros_like(values)


def scifact_fusion() -> str:
    docs = read_jsonl(SCIFACT / "corpus.jsonl")
    ids = [d["_id"] for d in docs]
    texts = [f"{d['title']} {d['text']}" for d in docs]
    settings = Settings()
    minilm, e5 = minilm_cache(settings), e5_cache(settings)
    e5_docs = e5.embed(texts)  # the cache's, from bench.e5's scifact_full
    mini_docs = minilm.embed(texts)
    rows: list[tuple] = []
    splits = {split: _claims(split) for split in ("train", "test")}
    scores: dict[str, dict[str, float]] = {"train": {}, "test": {}}

    def record(split: str, name: str, rankings: Sequence[Sequence[str]]) -> None:
        scores[split][name] = _ndcg(rankings, splits[split][1])

    e5_store = sqlite_store(WORK / "scifact-e5.db", e5)
    mini_store = sqlite_store(WORK / "scifact.db", minilm)
    try:
        for split, (claims, _) in splits.items():
            e5_q, mini_q = embed_queries(e5, claims), embed_queries(minilm, claims)
            for constants in CONSTANTS:
                alpha, beta, feedback = constants
                store_sql.fuse_with_feedback = functools.partial(
                    fusion.fuse_with_feedback, alpha=alpha, beta=beta, feedback_alpha=feedback
                )
                try:
                    found = e5_store.search_many(
                        "scifact", claims, mode="hybrid", top_k=10, vectors=e5_q
                    )
                finally:
                    store_sql.fuse_with_feedback = fusion.fuse_with_feedback
                record(split, f"e5 hybrid {constants}", [[h.id for h in f] for f in found])
            hybrid = mini_store.search_many(
                "scifact", claims, mode="hybrid", top_k=100, vectors=mini_q
            )
            lexical = mini_store.search_many("scifact", claims, mode="lexical", top_k=200)
            record(split, "MiniLM hybrid (default)", [[h.id for h in f[:10]] for f in hybrid])
            e5_cos, mini_cos = e5_q @ e5_docs.T, mini_q @ mini_docs.T
            for weight in (0.3, 0.5, 0.7, 1.0):
                ranked = [
                    _ensemble(ids, [({h.id: h.score for h in f}, 1.0)], [(e5_cos[i], weight)])
                    for i, f in enumerate(hybrid)
                ]
                record(split, f"MiniLM hybrid + {weight} z(e5)", ranked)
            for lexical_w, mini_w, e5_w in ((1, 1, 1), (1, 1, 0.7), (1, 0.7, 1), (0.7, 1, 1)):
                ranked = [
                    _ensemble(
                        ids,
                        [({h.id: h.score for h in f}, lexical_w)],
                        [(mini_cos[i], mini_w), (e5_cos[i], e5_w)],
                        fill=0.0,
                    )
                    for i, f in enumerate(lexical)
                ]
                record(split, f"BM25 {lexical_w} + MiniLM {mini_w} + e5 {e5_w}", ranked)
    finally:
        e5_store.close()
        mini_store.close()
        e5.close()
        minilm.close()
    for name in scores["train"]:
        rows.append((name, scores["train"][name], scores["test"][name]))
    return table(
        "SciFact nDCG@10: e5's own fusion constants and ensembles of both models "
        "(choose on train, read test)",
        ["ranking", "train (809)", "test (300)"],
        rows,
    )


def _ensemble(
    ids: list[str],
    lists: list[tuple[dict[str, float], float]],
    dense: list[tuple[np.ndarray, float]],
    *,
    fill: float | None = None,
    depth: int = 100,
) -> list[str]:
    """Top 10 of the weighted sum of standard scores over the union of the candidates:
    each list's own, each dense score's ``depth`` best. A list's missing candidate gets
    ``fill`` (its lowest score when None)."""
    candidates = list(dict.fromkeys(
        [doc for scores, _ in lists for doc in scores]
        + [ids[j] for cosines, _ in dense for j in np.argsort(-cosines)[:depth]]
    ))  # fmt: skip
    at = {doc: j for j, doc in enumerate(ids)}
    fused = np.zeros(len(candidates))
    for scores, weight in lists:
        low = min(scores.values()) if fill is None else fill
        fused += weight * _zscore(np.array([scores.get(d, low) for d in candidates]))
    for cosines, weight in dense:
        fused += weight * _zscore(np.array([cosines[at[d]] for d in candidates]))
    return [candidates[j] for j in np.argsort(-fused)[:10]]


def chunks256() -> str:
    settings = Settings(home=E5_256_HOME, embed={"embedder": "e5"}, library={"chunk_tokens": 256})
    timing = E5_256_HOME / "timing.json"
    rows = []
    with closing(e5_cache(settings)) as e5, sqlite_store(settings.db_path, e5) as store:
        if not timing.exists():
            add_library(LIBRARY, str(K8S / "library"), settings)
            start = time.perf_counter()
            report = index_library(LIBRARY, store, settings=settings)
            seconds = time.perf_counter() - start
            timing.write_text(json.dumps({"seconds": seconds, "records": report.records}))
        for name, (texts, gold) in questions().items():
            if name.startswith("test"):
                for mode in ("lexical", "dense", "hybrid", "full"):
                    rows.append((name, mode, *hits(pages(store, settings, texts, mode), gold)))
    figures = json.loads(timing.read_text())
    return table(
        f"Kubernetes, e5 in 256-token chunks ({figures['records']} chunks, indexed in "
        f"{figures['seconds']:.0f} s): page Hit@1 / Hit@3 / Hit@5",
        ["questions", "mode", "Hit@1", "Hit@3", "Hit@5"],
        rows,
    )


PARTS: dict[str, Callable[[], str]] = {
    "modes": modes,
    "known_terms": known_terms,
    "scifact_fusion": scifact_fusion,
    "chunks256": chunks256,
}


def run() -> str:
    return "\n".join(part() for part in PARTS.values())


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:] or list(PARTS):
        PARTS[name]()
