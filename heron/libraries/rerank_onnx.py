"""A ``Reranker`` running a cross-encoder exported to ONNX (e.g. ms-marco-MiniLM-L-6-v2).

The folder of ``model.onnx`` must hold the model's ``tokenizer.json``. Each candidate is
read with the query as a pair, truncated to ``max_tokens``; the score is the model's last
logit. Nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from heron.embed.minilm import create_session
from heron.errors import ModelError
from heron.store import Hit

EXPORT = (
    "Export the model with: optimum-cli export onnx --model cross-encoder/ms-marco-MiniLM-L-6-v2 "
    "DIR, or set HERON_LIBRARY_RERANKER=default."
)
#: The inputs a BERT-style cross-encoder may declare; the backend feeds those it does.
FEEDS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


class OnnxCrossEncoder:
    def __init__(
        self, model: Path, *, max_tokens: int = 512, batch_size: int = 16, threads: int = 0
    ) -> None:
        from tokenizers import Tokenizer

        model = Path(model)
        tokenizer_file = model.with_name("tokenizer.json")
        if not model.is_file() or not tokenizer_file.is_file():
            raise ModelError(
                f"Cross-encoder files missing: need {model} and {tokenizer_file}. {EXPORT}"
            )
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # tokenizers raises untyped errors
            raise ModelError(f"Cannot read {tokenizer_file}: {exc}. {EXPORT}") from exc
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.session = create_session(model, threads, what="the cross-encoder", advice=EXPORT)
        self.inputs = {i.name for i in self.session.get_inputs()}
        # Checked here so a wrong model fails when loaded, not on every query.
        if unknown := self.inputs - FEEDS:
            raise ModelError(
                f"{model} is not a BERT-style cross-encoder: it wants inputs "
                f"{', '.join(sorted(unknown))}; Heron feeds {', '.join(sorted(FEEDS))}. {EXPORT}"
            )
        self.batch_size = batch_size

    def rerank(self, query: str, hits: Sequence[Hit]) -> np.ndarray:
        scores = np.empty(len(hits), dtype=np.float32)
        for start in range(0, len(hits), self.batch_size):
            batch = [(query, h.text) for h in hits[start : start + self.batch_size]]
            encodings = self.tokenizer.encode_batch(batch)
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            feeds = {name: value for name, value in feeds.items() if name in self.inputs}
            try:
                logits = self.session.run(None, feeds)[0]
            except Exception as exc:  # onnxruntime raises untyped errors
                raise ModelError(
                    f"The cross-encoder failed: {exc}. Check HERON_LIBRARY_RERANK_MODEL, or set "
                    "HERON_LIBRARY_RERANKER=default."
                ) from exc
            scores[start : start + len(batch)] = np.asarray(logits).reshape(len(batch), -1)[:, -1]
        return scores
