"""Embedding speed (issue 48): the bundled graphs as Heron ran them and as it runs them now.

1. ``throughput``: ``CHUNKS`` Kubernetes chunks (every n-th chunk of the library, as Heron
   cuts it), each configuration timed over the same texts, interleaved, ``ROUNDS`` rounds,
   medians: MiniLM's shipped graph in batches of 8 (Heron until issue 48), the rebuilt int8
   graph one text per run, the runs in turn (each on every thread) and side by side (one
   thread each, now), and in batches of 8; e5 in turn and side by side; the default
   profile (both models) each way. Also the lowest cosine of the rebuilt graph's vectors
   to the shipped graph's.
2. ``indexing``: the first ``INDEX_PAGES`` Kubernetes pages indexed in a fresh home (no
   embedding cache) under minilm and the default profile: before, runs in turn, now.
3. ``first_answer``: ``heron ask "What is Heron?"`` from the shell in a new home, per
   profile: seconds, and whether it cites Heron's docs (loaded from their shipped vectors).
4. ``quality``: the whole Kubernetes library embedded by both MiniLM graphs (vectors in the
   bench's embedding cache, so a rerun is quick), page Hit@1/Hit@5 of dense search on the
   dev questions, precise and vague.

Settings: the defaults (threads: every core). The CPU's flags are printed with the tables:
the int8 graph's gain comes from VNNI/AMX integer kernels.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.common import SHARED, WORK, read_jsonl, table
from heron.embed import CachedEmbedder, Embedder, MiniLMEmbedder, MultilingualEmbedder
from heron.embed.e5_onnx import ONNX_MODEL_ID, E5OnnxEmbedder, ensure_graph
from heron.embed.minilm import create_session
from heron.embed.minilm import ensure_graph as minilm_graph
from heron.libraries import add_library, index_library
from heron.libraries.chunk import chunk_page, policy_for, token_counter
from heron.libraries.config import DEFAULT_DOCS_NAME
from heron.libraries.scan import read_page, scan
from heron.settings import Settings
from heron.store import open_store

K8S = SHARED / "data" / "docs" / "kubernetes"
CHUNKS = 500
INDEX_PAGES = 200
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


def in_turn(embedder: MiniLMEmbedder | E5OnnxEmbedder) -> Embedder:
    """``embedder`` as Heron ran it before its runs went side by side: one text per run,
    one run at a time on every thread (``heron.embed.base.run_each`` says why not)."""
    graph = embedder.graph if isinstance(embedder, E5OnnxEmbedder) else None
    embedder.session = create_session(
        graph or minilm_graph(Settings().models_dir), embedder.workers
    )
    embedder.workers = 1
    return embedder


def configurations(settings: Settings) -> dict[str, Callable[[], Embedder]]:
    models = settings.models_dir
    graph = ensure_graph(models)
    threads = settings.embed.threads

    def e5() -> E5OnnxEmbedder:
        return E5OnnxEmbedder(graph, threads=threads)

    def shipped() -> Embedder:
        return MiniLMEmbedder(models, batch_size=8, threads=threads, shipped=True)

    def quantized() -> MiniLMEmbedder:
        return MiniLMEmbedder(models, threads=threads)

    return {
        "MiniLM shipped graph, batches of 8 (before)": shipped,
        "MiniLM int8, one text per run, runs in turn": lambda: in_turn(quantized()),
        "MiniLM int8, one text per run, side by side (now)": quantized,
        "MiniLM int8 graph, batches of 8": lambda: MiniLMEmbedder(
            models, batch_size=8, threads=threads
        ),
        "e5-small int8, runs in turn": lambda: in_turn(e5()),
        "e5-small int8, side by side (now)": e5,
        "default profile, MiniLM shipped + e5 (before)": lambda: MultilingualEmbedder(
            shipped(), lambda: in_turn(e5()), ONNX_MODEL_ID
        ),
        "default profile, MiniLM int8 + e5, runs in turn": lambda: MultilingualEmbedder(
            in_turn(quantized()), lambda: in_turn(e5()), ONNX_MODEL_ID
        ),
        "default profile, MiniLM int8 + e5, side by side (now)": lambda: MultilingualEmbedder(
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
        f"rounds, {settings.embed.threads or 'all'} threads (CPU flags: {cpu_flags()}); int8 "
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


def k8s_pages(folder: Path, n: int = INDEX_PAGES) -> Path:
    """A folder library of the first ``n`` Kubernetes pages (sorted paths), made once."""
    root = K8S / "library"
    if not folder.is_dir():
        for path in sorted(root.rglob("*.md"))[:n]:
            target = folder / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    return folder


def indexing(n: int = INDEX_PAGES) -> str:
    """The same ``n`` Kubernetes pages indexed in a fresh home (no embedding cache) under
    minilm and the default profile, each with the MiniLM graph before and now."""
    settings = Settings()
    makers = configurations(settings)
    pages = k8s_pages(WORK / "embed_speed" / f"k8s-{n}", n)
    rows = []
    base = 0.0
    for name in (
        "MiniLM shipped graph, batches of 8 (before)",
        "MiniLM int8, one text per run, runs in turn",
        "MiniLM int8, one text per run, side by side (now)",
        "default profile, MiniLM shipped + e5 (before)",
        "default profile, MiniLM int8 + e5, runs in turn",
        "default profile, MiniLM int8 + e5, side by side (now)",
    ):
        with tempfile.TemporaryDirectory() as tmp:
            home = Settings(home=Path(tmp), library={"default_docs": False}, embed={"cache": False})
            add_library("k8s", str(pages), home)
            with makers[name]() as embedder, open_store(home, embedder) as store:
                start = time.perf_counter()
                report = index_library("k8s", store, settings=home)
                seconds = time.perf_counter() - start
        base = base or seconds
        rows.append(
            (name, report.records, f"{seconds:.0f}", report.records / seconds, seconds / base)
        )
    return table(
        f"Indexing the first {n} Kubernetes pages in a fresh home, no embedding cache "
        f"(CPU flags: {cpu_flags()})",
        ["embedder", "chunks", "seconds", "chunks/s", "time vs MiniLM before"],
        rows,
    )


def first_answer(question: str = "What is Heron?") -> str:
    """``heron ask`` in a new home (its built-in library not indexed), from the shell, per
    profile: seconds to the answer and whether it cites Heron's docs."""
    rows = []
    for profile in ("minilm", "multilingual"):
        with tempfile.TemporaryDirectory() as tmp:
            env = {
                **os.environ,
                "HERON_HOME": tmp,
                "HERON_EMBEDDER": profile,
                "HERON_MODELS_DIR": str(Settings().models_dir),
            }
            env.pop("HERON_CONFIG", None)
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "heron", "ask", question, "--json"],
                env=env,
                capture_output=True,
                text=True,
            )
            seconds = time.perf_counter() - start
        try:
            cited = [c["library"] for c in json.loads(done.stdout)["citations"]]
        except (ValueError, KeyError):
            cited = [f"failed: {done.stderr.strip()[-200:]}"]
        rows.append((profile, f"{seconds:.1f}", DEFAULT_DOCS_NAME in cited, ", ".join(cited)))
    return table(
        f'A new home\'s first answer: heron ask "{question}" from the shell',
        ["profile", "seconds", "cites Heron's docs", "libraries cited"],
        rows,
    )


def run() -> str:
    return throughput() + "\n" + indexing() + "\n" + first_answer() + "\n" + quality()


if __name__ == "__main__":
    run()
