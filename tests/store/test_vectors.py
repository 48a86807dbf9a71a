from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from heron.store.vectors import ExactIndex, HnswIndex, top_k


@pytest.mark.parametrize("make", [ExactIndex, HnswIndex])
def test_add_replace_remove_search(make: type) -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = make(16)
    index.add(np.arange(200, dtype=np.int64), vectors)
    assert len(index) == 200 and 5 in index
    keys, scores = index.search(vectors[5], 3)
    assert keys[0] == 5 and scores[0] == pytest.approx(1.0, abs=1e-2)
    index.add(np.array([5], dtype=np.int64), vectors[6:7])  # replace
    assert len(index) == 200
    index.remove(np.array([6, 999], dtype=np.int64))
    assert 6 not in index and len(index) == 199
    keys, _ = index.search(vectors[6], 1)
    assert keys[0] == 5  # now holds 6's vector
    allowed = np.array([1, 2, 3], dtype=np.int64)
    keys, _ = index.search(vectors[2], 10, allowed)
    assert sorted(keys.tolist()) == [1, 2, 3] and keys[0] == 2
    np.testing.assert_allclose(index.vectors(np.array([1])), vectors[1:2], atol=1e-3)


def test_top_k_breaks_ties_by_key() -> None:
    keys, _ = top_k(np.array([9, 3, 7]), np.array([0.5, 0.5, 0.9]), 2)
    assert keys.tolist() == [7, 3]


def test_onnxruntime_can_load_after_the_hnsw_index() -> None:
    code = (
        "from heron.store.vectors import HnswIndex; HnswIndex(8); import onnxruntime; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
