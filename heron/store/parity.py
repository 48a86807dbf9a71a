"""Do two stores answer alike? The same queries on both, overlap@k per search mode.

``overlap@k`` of one query is the share of one store's top ``k`` ids that the other's top
``k`` also holds; the report gives its mean over the queries, and the share of queries
whose top ``k`` agree in order too. Both stores must hold the same records in the
namespace (for example, loaded from the same file with ``heron store load``).

>>> report = parity(sqlite_store, postgres_store, "docs", ["pods", "services"])  # doctest: +SKIP
>>> report.overlap["hybrid"]                                                     # doctest: +SKIP
1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heron.errors import InputError, StoreError
from heron.store.base import SEARCH_MODES, SearchMode, Store


@dataclass(frozen=True)
class ParityReport:
    namespace: str
    queries: int
    top_k: int
    #: Mean overlap@k per mode.
    overlap: dict[str, float]
    #: Share of queries whose top k ids are the same, in the same order, per mode.
    same_order: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "queries": self.queries,
            "top_k": self.top_k,
            "overlap": self.overlap,
            "same_order": self.same_order,
        }


def overlap_at_k(a: Sequence[str], b: Sequence[str], k: int) -> float:
    """``|top_k(a) & top_k(b)| / k``; two empty lists agree fully."""
    top_a, top_b = set(a[:k]), set(b[:k])
    if not top_a and not top_b:
        return 1.0
    return len(top_a & top_b) / max(len(top_a), len(top_b))


def parity(
    a: Store,
    b: Store,
    namespace: str,
    queries: Sequence[str],
    *,
    top_k: int = 10,
    modes: Sequence[SearchMode] = SEARCH_MODES,
) -> ParityReport:
    """Run ``queries`` on ``a`` and ``b`` in every mode of ``modes`` and compare the ids."""
    if not queries:
        raise InputError("Parity needs at least one query.")
    count_a, count_b = a.count(namespace), b.count(namespace)
    if count_a != count_b:
        raise StoreError(
            f"Namespace {namespace!r} holds {count_a} records in one store and {count_b} in "
            "the other; load the same records into both, then compare."
        )
    overlap, same = {}, {}
    for mode in modes:
        hits_a = a.search_many(namespace, queries, mode=mode, top_k=top_k)
        hits_b = b.search_many(namespace, queries, mode=mode, top_k=top_k)
        ids = [([h.id for h in x], [h.id for h in y]) for x, y in zip(hits_a, hits_b, strict=True)]
        overlap[mode] = sum(overlap_at_k(x, y, top_k) for x, y in ids) / len(ids)
        same[mode] = sum(x == y for x, y in ids) / len(ids)
    return ParityReport(namespace, len(queries), top_k, overlap, same)
