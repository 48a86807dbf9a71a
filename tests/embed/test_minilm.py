from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from heron.embed import MiniLMEmbedder
from heron.embed.minilm import QUANTIZED_ID, SHIPPED_ID, ensure_graph, graph_path, mean_pool
from heron.errors import InputError, ModelError
from heron.settings import Settings

# First values of all-MiniLM-L6-v2 (the shipped int8 ONNX graph, this pipeline) for "hello
# world"; the float32 sentence-transformers model gives -0.0345, 0.0310, 0.0067, 0.0261,
# -0.0394.
GOLDEN = [-0.03482, 0.03014, 0.01300, 0.02538, -0.03745]
#: The shipped graph computes in float32 (its int8 weights are dequantised once), so its values
#: hardly depend on the CPU's kernels: onnxruntime's optimisation levels, threads and
#: numpy's evaluation of the same graph (float32, or float64 products) differ by at most
#: 1.4e-7 here (python -m tests.embed.spread; docs/benchmarks.md, "Golden values and
#: thresholds on any CPU"). The golden values are rounded to 5 decimals (5e-6); 2e-5 is
#: that plus a hundred times the kernels' spread, and still fails a changed model.
GOLDEN_ATOL = 2e-5
#: Texts of the kinds Heron embeds: a question, a doc passage with code, a title, a
#: request in Portuguese.
CLOSE_TEXTS = [
    "How do I restart a pod?",
    "kubectl rollout undo deployment/nginx reverts a Deployment to its previous revision; "
    "the rollout history keeps the last ten ReplicaSets.",
    "Configure Liveness, Readiness and Startup Probes",
    "como reinicio um pod que travou?",
]
#: The int8 graph against the shipped one on CLOSE_TEXTS: 0.992 to 0.995 here (exact int8
#: products); over 500 Kubernetes chunks 0.992 at worst, mean 0.996 (docs/benchmarks.md).
CLOSE_COSINE = 0.99
#: One word is the worst case: its few tokens set each activation scale alone ("hello":
#: 0.985).
ONE_WORD_COSINE = 0.98


@pytest.fixture(scope="module")
def shipped() -> MiniLMEmbedder:
    return MiniLMEmbedder(Settings().models_dir, threads=1, shipped=True)


def test_shape_dtype_and_unit_length(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["hello world", "pods run containers", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_golden_values_of_the_shipped_graph(shipped: MiniLMEmbedder) -> None:
    np.testing.assert_allclose(shipped.embed(["hello world"])[0, :5], GOLDEN, atol=GOLDEN_ATOL)


def test_the_int8_graph_stays_close_to_the_shipped_one(
    embedder: MiniLMEmbedder, shipped: MiniLMEmbedder
) -> None:
    assert (embedder.model_id, shipped.model_id) == (QUANTIZED_ID, SHIPPED_ID)
    cosines = (embedder.embed(CLOSE_TEXTS) * shipped.embed(CLOSE_TEXTS)).sum(axis=1)
    assert cosines.min() >= CLOSE_COSINE, cosines
    assert embedder.embed(["hello"])[0] @ shipped.embed(["hello"])[0] >= ONE_WORD_COSINE
    # A graph that ignored its input would still be close to itself, not to other texts.
    assert (embedder.embed(CLOSE_TEXTS[:1]) @ shipped.embed(CLOSE_TEXTS[1:2]).T) < 0.9


def test_meaning_is_captured(embedder: MiniLMEmbedder) -> None:
    a, b, c = embedder.embed(
        ["How do I restart a pod?", "restarting a Kubernetes pod", "chocolate cake recipe"]
    )
    assert a @ b > 0.5 > a @ c


def test_batching_and_padding_do_not_change_vectors(embedder: MiniLMEmbedder) -> None:
    texts = [
        "short",
        "a much longer sentence about deployments and rollbacks " * 5,
        "mid length text",
    ]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-3)


def test_order_is_preserved_across_batches(tmp_path: Path) -> None:
    # The shipped graph: in float32 a vector does not depend on its batch-mates.
    small = MiniLMEmbedder(Settings().models_dir, batch_size=2, threads=1, shipped=True)
    texts = [f"text number {i} " * (10 - i) for i in range(7)]
    batched = small.embed(texts)
    assert small.calls == 4
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batched[i], small.embed([text])[0], atol=2e-3)


def test_truncates_at_256_tokens(embedder: MiniLMEmbedder) -> None:
    words = [f"word{i}" for i in range(400)]
    long = embedder.embed([" ".join(words)])
    encoding = embedder.tokenizer.encode(" ".join(words))
    assert len(encoding.ids) == 256
    longer = embedder.embed([" ".join(words + ["extra"] * 100)])
    np.testing.assert_allclose(long, longer, atol=1e-5)


def test_huge_text_is_cut_with_a_warning(
    embedder: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="heron.embed"):
        vectors = embedder.embed(["lorem ipsum " * 20_000])
    assert vectors.shape == (1, 384)
    assert "embedding the first 100000" in caplog.text


def test_invalid_unicode_is_replaced_not_fatal(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["broken \udcff surrogate", "caf\u00e9"])
    assert np.isfinite(vectors).all()


def test_rejects_a_bare_string_and_non_strings(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(InputError, match="not one string"):
        embedder.embed("hello")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="is int"):
        embedder.embed(["ok", 3])  # type: ignore[list-item]


def test_empty_batch(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_mean_pool_ignores_padding() -> None:
    hidden = np.array([[[1.0, 1.0], [3.0, 3.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(mean_pool(hidden, mask), [[2.0, 2.0]])


def test_missing_tokenizer_says_how_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="heron embedder fetch"):
        MiniLMEmbedder(tmp_path)


def test_a_damaged_int8_graph_is_built_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    built = graph_path(Settings().models_dir)
    ensure_graph(Settings().models_dir)
    copy = graph_path(tmp_path)
    copy.parent.mkdir()
    for source in (built, built.with_name(f"{built.name}.sha256")):
        shutil.copy(source, copy.parent / source.name)
    assert ensure_graph(tmp_path) == copy  # the digest matches: used as it is
    with copy.open("r+b") as f:  # one byte changed: still a loadable graph, another model
        f.seek(copy.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 1]))
    with caplog.at_level(logging.WARNING, logger="heron.embed"):
        assert ensure_graph(tmp_path) == copy
    assert "has SHA-256" in caplog.text and "Building it again" in caplog.text
    assert copy.read_bytes() == built.read_bytes()


def test_corrupt_tokenizer_says_how_to_refetch(tmp_path: Path) -> None:
    target = tmp_path / "all-MiniLM-L6-v2" / "tokenizer.json"
    target.parent.mkdir()
    target.write_text("{not json")
    with pytest.raises(ModelError, match="heron embedder fetch"):
        MiniLMEmbedder(tmp_path)
