"""Embedding throughput: heron.embed against plain onnxruntime, same model, same batch size.

The plain pipeline is what a user writes from the onnxruntime and tokenizers docs: the
same tokenizer padded per batch, a default session, mean pooling, texts in input order.
"""

from __future__ import annotations

import numpy as np

from bench.common import SCIFACT, read_jsonl, table, timed
from heron.embed import MiniLMEmbedder
from heron.embed.assets import onnx_path
from heron.embed.minilm import mean_pool
from heron.settings import Settings

BATCH = 32


def plain_onnxruntime(texts: list[str]) -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from heron.embed.assets import tokenizer_path

    tokenizer = Tokenizer.from_file(str(tokenizer_path(Settings().models_dir)))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    session = ort.InferenceSession(str(onnx_path()), providers=["CPUExecutionProvider"])
    out = []
    for start in range(0, len(texts), BATCH):
        encodings = tokenizer.encode_batch(texts[start : start + BATCH])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (hidden,) = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        pooled = mean_pool(hidden, mask)
        out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return np.vstack(out)


def run(n: int = 1000) -> str:
    docs = read_jsonl(SCIFACT / "corpus.jsonl")[:n]
    texts = [f"{d['title']} {d['text']}" for d in docs]
    heron = MiniLMEmbedder(Settings().models_dir, batch_size=BATCH)
    heron.embed(texts[:BATCH])  # warm up both
    plain_onnxruntime(texts[:BATCH])
    rows = []
    plain_vectors, plain_s = timed(lambda: plain_onnxruntime(texts))
    heron_vectors, heron_s = timed(lambda: heron.embed(texts))
    agreement = float(np.min(np.sum(plain_vectors * heron_vectors, axis=1)))
    rows.append(("plain onnxruntime", n / plain_s, 1.0, "-"))
    rows.append(("heron.embed", n / heron_s, plain_s / heron_s, f"{agreement:.4f}"))
    return table(
        f"Embedding throughput, {n} SciFact abstracts, batch {BATCH}",
        ["pipeline", "texts/s", "ratio", "min cosine vs plain"],
        rows,
    )


if __name__ == "__main__":
    run()
