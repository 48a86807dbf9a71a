"""The ``Embedder`` contract (``heron/embed/base.py``), run on every embedder: the bundled
model, the e5 profile's converted graph, the multilingual pair of both, a remote one
against a local OpenAI-compatible server, and the cache in front of the bundled model."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from heron.embed import (
    CachedEmbedder,
    E5OnnxEmbedder,
    Embedder,
    MiniLMEmbedder,
    MultilingualEmbedder,
    RemoteEmbedder,
    load_embedder,
)
from heron.embed.e5_onnx import ensure_graph
from heron.errors import InputError, ModelError
from heron.settings import Settings
from tests.openai_server import serve

KINDS = ["minilm", "e5", "multilingual", "remote", "cached"]
TEXTS = [f"note {i}: a pod runs {i} containers" for i in range(40)]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def any_embedder(kind: str, embedder: MiniLMEmbedder, tmp_path: Path) -> Iterator[Embedder]:
    if kind == "minilm":
        yield embedder
    elif kind == "e5":  # the graph scripts/setup converted (converted here if missing)
        e5 = E5OnnxEmbedder(ensure_graph(Settings().models_dir), threads=1)
        yield e5
        e5.close()
    elif kind == "multilingual":
        e5 = E5OnnxEmbedder(ensure_graph(Settings().models_dir), threads=1)
        with MultilingualEmbedder(embedder, lambda: e5, e5.model_id) as pair:
            yield pair
        e5.close()
    elif kind == "remote":
        with serve(dim=8) as (url, _):
            remote = RemoteEmbedder(url, "m", batch_size=8)
            yield remote
            remote.close()
    else:
        cache = CachedEmbedder(embedder, tmp_path / "cache.db")
        yield cache
        cache.close()


def test_rows_are_unit_float32_vectors_in_input_order(any_embedder: Embedder) -> None:
    assert isinstance(any_embedder, Embedder)
    vectors = any_embedder.embed(TEXTS[:5])
    assert vectors.shape == (5, any_embedder.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one_by_one = np.vstack([any_embedder.embed([t]) for t in TEXTS[:5]])
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-5)
    assert any_embedder.embed([]).shape == (0, any_embedder.dim)
    assert any_embedder.embed([""]).shape == (1, any_embedder.dim)


def test_input_that_is_not_a_list_of_strings_is_refused(any_embedder: Embedder) -> None:
    with pytest.raises(InputError, match=r"embed\(\[text\]\)"):
        any_embedder.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="Text 1 is int"):
        any_embedder.embed(["fine", 3])  # type: ignore[list-item]


def test_threads_embedding_at_once_get_what_one_thread_gets(any_embedder: Embedder) -> None:
    serial = any_embedder.embed(TEXTS)
    chunks = [TEXTS[i : i + 5] for i in range(0, len(TEXTS), 5)]
    with ThreadPoolExecutor(4) as pool:
        parallel = np.vstack(list(pool.map(any_embedder.embed, chunks * 3)))
    np.testing.assert_allclose(parallel, np.vstack([serial] * 3), atol=1e-5)


def test_close_is_idempotent_and_a_closed_embedder_says_so(
    kind: str, any_embedder: Embedder
) -> None:
    any_embedder.close()
    any_embedder.close()
    if kind in ("minilm", "e5"):  # hold nothing to release: they keep working
        assert any_embedder.embed(["still here"]).shape == (1, 384)
        return
    with pytest.raises(ModelError, match=r"was closed; load (it|the embedder) again"):
        any_embedder.embed(["after close"])


def test_the_cache_closes_the_model_it_wraps_only_when_told(tmp_path: Path) -> None:
    with serve(dim=8) as (url, _):
        inner = RemoteEmbedder(url, "m", dim=8)
        CachedEmbedder(inner, tmp_path / "a.db").close()
        assert inner.embed(["the cache left me open"]).shape == (1, 8)
        CachedEmbedder(inner, tmp_path / "b.db", close_inner=True).close()
        with pytest.raises(ModelError, match="closed"):
            inner.embed(["closed with the cache"])


def test_load_embedder_hands_its_model_to_the_cache(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(dim=8) as (url, _):
        monkeypatch.setenv("HERON_EMBEDDER", "remote")
        monkeypatch.setenv("HERON_REMOTE_EMBED_URL", url)
        monkeypatch.setenv("HERON_REMOTE_EMBED_MODEL", "m")
        loaded = load_embedder(Settings())
        assert isinstance(loaded, CachedEmbedder) and isinstance(loaded.inner, RemoteEmbedder)
        loaded.close()
        with pytest.raises(ModelError, match="closed"):
            loaded.inner.embed(["x"])


@pytest.mark.parametrize("kind", ["minilm", "e5"])
def test_runs_side_by_side_give_what_one_run_at_a_time_gives(kind: str) -> None:
    # One text per run: with every run on one intra-op thread, the vectors are the same
    # bits however many runs go side by side, and come back in input order.
    models = Settings().models_dir
    texts = [f"{t} ({len(t)})" for t in TEXTS[::-1]]
    if kind == "minilm":
        one, three = MiniLMEmbedder(models, threads=1), MiniLMEmbedder(models, threads=3)
    else:
        graph = ensure_graph(models)
        one, three = E5OnnxEmbedder(graph, threads=1), E5OnnxEmbedder(graph, threads=3)
    with one, three:
        assert three.workers == 3
        np.testing.assert_array_equal(three.embed(texts), one.embed(texts))
