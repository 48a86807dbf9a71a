from __future__ import annotations

import numpy as np
import pytest

from heron.embed import RemoteEmbedder
from heron.errors import RemoteModelError
from tests.openai_server import serve, vector_for


def test_embeds_in_batches_with_order_and_auth() -> None:
    with serve(dim=8) as (url, requests):
        embedder = RemoteEmbedder(url, "text-embedding-3-small", api_key="sk-test", batch_size=2)
        vectors = embedder.embed(["a", "b", "c"])
    assert vectors.shape == (3, 8)
    expected = np.array(vector_for("c", 8), dtype=np.float32)
    np.testing.assert_allclose(vectors[2], expected / np.linalg.norm(expected), atol=1e-5)
    assert [len(r["input"]) for r in requests] == [2, 1]
    assert requests[0]["auth"] == "Bearer sk-test"
    assert embedder.model_id == "remote:text-embedding-3-small"
    assert embedder.dim == 8


def test_dimension_is_learned_from_the_server() -> None:
    with serve(dim=16) as (url, _):
        assert RemoteEmbedder(url, "m").dim == 16


def test_server_error_names_the_model() -> None:
    with (
        serve() as (url, _),
        pytest.raises(RemoteModelError, match="answered 500 for model 'fail-500'"),
    ):
        RemoteEmbedder(url, "fail-500", dim=8).embed(["x"])


def test_garbage_body_is_reported() -> None:
    with serve() as (url, _), pytest.raises(RemoteModelError, match="not an OpenAI embeddings"):
        RemoteEmbedder(url, "fail-garbage", dim=8).embed(["x"])


def test_unreachable_server_says_what_to_check() -> None:
    with serve() as (url, _):
        pass  # the server is gone once the block ends
    with pytest.raises(RemoteModelError, match=r"unreachable.*HERON_REMOTE_EMBED_URL"):
        RemoteEmbedder(url, "m", dim=8, timeout=2).embed(["x"])
