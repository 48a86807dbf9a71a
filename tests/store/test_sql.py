"""``heron.store.sql``: the half of every backend written once (behaviour: test_contract.py)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from heron.store import SQLiteStore, Store, sql
from heron.store.postgres import PostgresStore

#: What a backend must write itself: every ``Store`` method but ``search``, which
#: ``Store`` spells out as ``search_many([query])[0]`` and every backend inherits.
OWN = sorted(
    name
    for name, member in vars(Store).items()
    if inspect.isfunction(member) and not name.startswith("_") and name != "search"
)


@pytest.mark.parametrize("backend", [SQLiteStore, PostgresStore])
def test_every_backend_writes_every_store_method(backend: type) -> None:
    """A subclass of a Protocol inherits its ``...`` bodies, which return None: a
    method a backend forgot would answer None instead of failing."""
    assert not inspect.isabstract(backend)
    assert sql.SQLStore in backend.__mro__ and Store in backend.__mro__
    missing = [name for name in OWN if getattr(backend, name) is getattr(Store, name)]
    assert missing == []
    assert backend.search is Store.search
    assert "search_many" in OWN and "close" in OWN


def test_candidates_are_ordered_by_score_then_key() -> None:
    keys = np.array([9, 3, 7, 1], dtype=np.int64)
    scores = np.array([0.5, 0.9, 0.5, 0.5], dtype=np.float32)
    vectors = np.arange(4, dtype=np.float32).reshape(4, 1)
    ordered_keys, ordered_scores, ordered_vectors = sql.best_first(keys, scores, vectors)
    assert ordered_keys.tolist() == [3, 1, 7, 9]
    assert ordered_scores.tolist() == [pytest.approx(0.9), 0.5, 0.5, 0.5]
    assert ordered_vectors is not None and ordered_vectors[:, 0].tolist() == [1, 3, 2, 0]
