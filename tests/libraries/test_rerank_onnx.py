"""The ONNX cross-encoder backend against real ONNX graphs run by onnxruntime.

No cross-encoder ships on PyPI, so each test builds a small graph with the ``onnx``
library whose logit is known in advance: the sum, over the pair's unmasked tokens, of a
weight per token id (1 for the tokens of a chosen word). The backend's own work is what
is under test: the query and passage read as a pair by the real MiniLM tokenizer,
batches padded and masked, inputs the graph does not declare left out, the last logit
taken, truncation, and errors that say what to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from heron.embed import assets
from heron.errors import ConfigError, ModelError
from heron.libraries import load_reranker
from heron.settings import LibrarySettings, Settings
from heron.store import Hit

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

VOCAB = 30522  # all-MiniLM-L6-v2's word pieces


def _model(
    folder: Path,
    word_ids: list[int],
    *,
    logits: int = 1,
    type_ids: bool = True,
    extra: str | None = None,
) -> Path:
    """``folder/model.onnx`` (with the MiniLM ``tokenizer.json`` beside it) scoring a pair
    by how many of its tokens are in ``word_ids``; with ``logits`` 2 the first column is a
    constant -100, so a backend that reads the wrong column ranks nothing."""
    weights = np.zeros((VOCAB, logits), dtype=np.float32)
    weights[:, 0] = -100.0 if logits > 1 else 0.0
    weights[word_ids, logits - 1] = 1.0
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "t"]),
    ]
    if type_ids:
        inputs.append(
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "t"])
        )
    if extra:  # declared but unused, as a model with other inputs would declare them
        inputs.append(helper.make_tensor_value_info(extra, TensorProto.INT64, ["b", "t"]))
    nodes = [
        helper.make_node("Gather", ["weights", "input_ids"], ["per_token"]),  # (b, t, logits)
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["per_token", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["logits"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "count_words",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", logits])],
        initializer=[
            helper.make_tensor("weights", TensorProto.FLOAT, weights.shape, weights.ravel()),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save(model, path)
    shutil.copy(assets.require_tokenizer(Settings().models_dir), folder / "tokenizer.json")
    return path


def _ids(word: str) -> list[int]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(assets.require_tokenizer(Settings().models_dir)))
    return tokenizer.encode(word, add_special_tokens=False).ids


def _hits(*texts: str) -> list[Hit]:
    return [Hit(f"c{i}", 0.0, text, {}, i + 1) for i, text in enumerate(texts)]


def test_scores_each_pair_in_order(tmp_path: Path) -> None:
    from heron.libraries.rerank_onnx import OnnxCrossEncoder

    reranker = OnnxCrossEncoder(_model(tmp_path / "m", _ids("volume")), batch_size=2)
    hits = _hits(
        "Pods run containers.",
        "A volume outlives its containers; a persistent volume outlives the Pod; volume "
        "snapshots copy a volume.",
        "Mount the volume.",
    )
    scores = reranker.rerank("which volume", hits)
    # The query's own "volume" counts once in every pair; padding in the batch of two
    # must not count.
    assert scores.tolist() == [1.0, 5.0, 2.0]
    assert scores.dtype == np.float32
    assert reranker.rerank("which volume", []).shape == (0,)


def test_last_logit_and_inputs_the_graph_lacks(tmp_path: Path) -> None:
    from heron.libraries.rerank_onnx import OnnxCrossEncoder

    path = _model(tmp_path / "m", _ids("volume"), logits=2, type_ids=False)
    scores = OnnxCrossEncoder(path).rerank("volume", _hits("no match", "volume volume"))
    assert scores.tolist() == [1.0, 3.0]


def test_pairs_are_truncated(tmp_path: Path) -> None:
    from heron.libraries.rerank_onnx import OnnxCrossEncoder

    path = _model(tmp_path / "m", _ids("volume"))
    long_text = "volume " * 2000
    scores = OnnxCrossEncoder(path, max_tokens=32).rerank("a", _hits(long_text))
    assert scores[0] == 28.0  # 32 tokens: [CLS] a [SEP], 28 of "volume", [SEP]


def test_loaded_from_settings_and_errors_say_what_to_do(tmp_path: Path) -> None:
    path = _model(tmp_path / "m", _ids("volume"))
    reranker = load_reranker(LibrarySettings(reranker="onnx", rerank_model=path))
    assert reranker is not None
    assert reranker.rerank("volume", _hits("x"))[0] == 1.0
    with pytest.raises(ConfigError, match="HERON_LIBRARY_RERANK_MODEL"):
        load_reranker(LibrarySettings(reranker="onnx"))
    (tmp_path / "m" / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json"):
        load_reranker(LibrarySettings(reranker="onnx", rerank_model=path))
    broken = tmp_path / "b"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    shutil.copy(assets.require_tokenizer(Settings().models_dir), broken / "tokenizer.json")
    with pytest.raises(ModelError, match="Cannot load"):
        load_reranker(LibrarySettings(reranker="onnx", rerank_model=broken / "model.onnx"))


def test_a_model_wanting_other_inputs_fails_when_loaded(tmp_path: Path) -> None:
    from heron.libraries.rerank_onnx import OnnxCrossEncoder

    path = _model(tmp_path / "m", _ids("volume"), extra="pixel_values")
    with pytest.raises(ModelError, match=r"wants inputs pixel_values.*optimum-cli"):
        OnnxCrossEncoder(path)
