"""Embedding speed (issue 48): the bundled graphs as Heron ran them and as it runs them now.

1. ``throughput``: ``CHUNKS`` Kubernetes chunks (every n-th chunk of the library, as Heron
   cuts it), each configuration timed over the same texts, interleaved, ``ROUNDS`` rounds,
   medians: MiniLM's shipped graph in batches of 8 (Heron until issue 48), the rebuilt int8
   graph one text at a time (now) and in batches of 8, e5, and the default profile
   (both models) with each MiniLM. Also the lowest cosine of the rebuilt graph's vectors to
   the shipped graph's.
2. ``quality``: the whole Kubernetes library embedded by both MiniLM graphs (vectors in the
   bench's embedding cache, so a rerun is quick), page Hit@1/Hit@5 of dense search on the
   dev questions, precise and vague.

Settings: the defaults (threads: every core). The CPU's flags are printed with the tables:
the int8 graph's gain comes from VNNI/AMX integer kernels.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.common import SHARED, WORK, read_jsonl, table
from heron.embed import CachedEmbedder, Embedder, MiniLMEmbedder, MultilingualEmbedder
from heron.embed.e5_onnx import ONNX_MODEL_ID, E5OnnxEmbedder, ensure_graph
from heron.libraries.chunk import chunk_page, policy_for, token_counter
from heron.libraries.scan import read_page, scan
from heron.settings import Settings

K8S = SHARED / "data" / "docs" / "kubernetes"
CHUNKS = 500
ROUNDS = 3
#: The CPU features the integer kernels use, as /proc/cpuinfo names them.
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")


def cpu_flags() -> str:
    try:
        words = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    return " ".join(f for f in FLAGS if f in words) or "none of " + " ".join(FLAGS)


def k8s_chunks(embedder: Embedder) -> list[tuple[str, str]]:
    """(page path, text embedded) of every chunk of the Kubernetes library, cut as Heron
    cuts it for ``embedder``."""
    root = K8S / "library"
    pages, _ = scan(root, 2_000_000)
    policy, count = policy_for(embedder, None, None), token_counter(embedder)
    out = []
    for file in pages:
        page, _ = read_page(file, 2_000_000)
        if page is None:
            continue
        path = file.path.relative_to(root).as_posix()
        out += [(path, c.dense_text) for c in chunk_page(page, policy, count)]
    return out


def sample(chunks: list[tuple[str, str]], n: int = CHUNKS) -> list[str]:
    step = max(1, len(chunks) // n)
    return [text for _, text in chunks[::step][:n]]


def configurations(settings: Settings) -> dict[str, Callable[[], Embedder]]:
    models = settings.models_dir
    graph = ensure_graph(models)
    threads = settings.embed_threads

    def e5() -> Embedder:
        return E5OnnxEmbedder(graph, threads=threads)

    def shipped() -> Embedder:
        return MiniLMEmbedder(models, batch_size=8, threads=threads, shipped=True)

    def quantized() -> Embedder:
        return MiniLMEmbedder(models, threads=threads)

    return {
        "MiniLM shipped graph, batches of 8 (before)": shipped,
        "MiniLM int8 graph, one text at a time (now)": quantized,
        "MiniLM int8 graph, batches of 8": lambda: MiniLMEmbedder(
            models, batch_size=8, threads=threads
        ),
        "e5-small int8, one text at a time": e5,
        "default profile, MiniLM shipped + e5 (before)": lambda: MultilingualEmbedder(
            shipped(), e5, ONNX_MODEL_ID
        ),
        "default profile, MiniLM int8 + e5 (now)": lambda: MultilingualEmbedder(
            quantized(), e5, ONNX_MODEL_ID
        ),
    }


def throughput(n: int = CHUNKS, rounds: int = ROUNDS) -> str:
    settings = Settings()
    makers = configurations(settings)
    models = {name: make() for name, make in makers.items()}
    texts = sample(k8s_chunks(next(iter(models.values()))), n)
    times: dict[str, list[float]] = {name: [] for name in models}
    vectors: dict[str, np.ndarray] = {}
    for model in models.values():
        model.embed(texts[:4])  # warm up: sessions, the second model of a profile
    for _ in range(rounds):
        for name, model in models.items():
            start = time.perf_counter()
            vectors[name] = model.embed(texts)
            times[name].append(time.perf_counter() - start)
    before, now = list(vectors)[:2]
    cosine = (vectors[before] * vectors[now]).sum(axis=1)
    base = statistics.median(times[before])
    rows = []
    for name, samples in times.items():
        seconds = statistics.median(samples)
        rows.append((name, len(texts) / seconds, seconds / base))
    return table(
        f"Embedding speed: {len(texts)} Kubernetes chunks, median of {rounds} interleaved "
        f"rounds, {settings.embed_threads or 'all'} threads (CPU flags: {cpu_flags()}); int8 "
        f"graph to shipped cosine min {cosine.min():.4f}, mean {cosine.mean():.4f}",
        ["configuration", "chunks/s", "time vs before"],
        rows,
    )


def hits(ranked: list[list[str]], gold: list[str], k: int) -> float:
    return float(np.mean([g in r[:k] for r, g in zip(ranked, gold, strict=True)]))


def pages_ranked(
    query: np.ndarray, vectors: np.ndarray, pages: list[str], depth: int = 5
) -> list[list[str]]:
    """Each query's pages by their best chunk's cosine, best first."""
    out = []
    for scores in query @ vectors.T:
        seen: list[str] = []
        for i in np.argsort(-scores):
            if pages[i] not in seen:
                seen.append(pages[i])
                if len(seen) == depth:
                    break
        out.append(seen)
    return out


def quality() -> str:
    settings = Settings()
    questions = [q for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == "dev"]
    precise = [q["question"] for q in questions]
    vague = [(v, q["page"]) for q in questions for v in q["vague"]]
    WORK.mkdir(exist_ok=True)
    rows = []
    for name, shipped in (("shipped graph (before)", True), ("int8 graph (now)", False)):
        model = MiniLMEmbedder(settings.models_dir, batch_size=8 if shipped else 1, shipped=shipped)
        with CachedEmbedder(model, WORK / "embeddings.db", close_inner=True) as cached:
            chunks = k8s_chunks(cached)
            pages = [page for page, _ in chunks]
            start = time.perf_counter()
            vectors = cached.embed([text for _, text in chunks])
            seconds = time.perf_counter() - start
            found = pages_ranked(cached.embed(precise), vectors, pages)
            found_vague = pages_ranked(cached.embed([v for v, _ in vague]), vectors, pages)
        gold = [q["page"] for q in questions]
        rows.append(
            (
                name,
                len(chunks),
                f"{seconds:.0f}",
                hits(found, gold, 1),
                hits(found, gold, 5),
                hits(found_vague, [p for _, p in vague], 5),
            )
        )
    return table(
        f"MiniLM dense search, Kubernetes dev questions ({len(questions)} precise, "
        f"{len(vague)} vague), page hits",
        ["MiniLM graph", "chunks", "embed s (0: cached)", "Hit@1", "Hit@5", "vague Hit@5"],
        rows,
    )


def run() -> str:
    return throughput() + "\n" + quality()


if __name__ == "__main__":
    run()
