from __future__ import annotations

from pathlib import Path

import numpy as np

from heron.embed import CachedEmbedder, MiniLMEmbedder


def test_unchanged_text_is_never_embedded_twice(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    cache = CachedEmbedder(embedder, tmp_path / "cache.db")
    texts = ["alpha", "beta", "alpha", "gamma"]
    calls = embedder.calls
    first = cache.embed(texts)
    assert cache.misses == 3  # "alpha" twice in one batch is embedded once
    assert embedder.calls == calls + 3  # one text per run
    second = cache.embed(texts)
    assert cache.misses == 3
    assert embedder.calls == calls + 3  # zero model calls
    np.testing.assert_array_equal(first, second)


def test_cache_survives_a_restart_and_is_keyed_by_model(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    CachedEmbedder(embedder, tmp_path / "cache.db").embed(["persisted"])
    again = CachedEmbedder(embedder, tmp_path / "cache.db")
    again.embed(["persisted"])
    assert again.misses == 0
    embedder.model_id, saved = "another-model", embedder.model_id
    try:
        other = CachedEmbedder(embedder, tmp_path / "cache.db")
        other.embed(["persisted"])
        assert other.misses == 1
    finally:
        embedder.model_id = saved


def test_only_misses_reach_the_model(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    cache = CachedEmbedder(embedder, tmp_path / "cache.db")
    cache.embed(["one", "two"])
    cache.embed(["two", "three", "one", "four"])
    assert cache.misses == 4
