"""Re-ranking the store's candidates: the ``Reranker`` protocol and the default ranker.

The store's hybrid search returns chunks with their fused score and its evidence (cosine,
BM25). A reranker sees the query and those candidates and returns one new score each;
``heron.libraries.search`` then groups by page. Backends: ``FeatureReranker`` (default, no
model), ``OnnxCrossEncoder`` (``heron.libraries.rerank_onnx``) and ``RemoteReranker``
(``heron.libraries.rerank_remote``, a TEI/Infinity/Cohere ``/rerank`` server).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

from heron.errors import ConfigError
from heron.settings import LibrarySettings
from heron.store import Hit
from heron.store.analysis import analyze, query_terms, readable, record_language


@runtime_checkable
class Reranker(Protocol):
    """Scores candidates for a query: ``rerank("q", hits)`` -> ``float32`` array, one score
    per hit in input order, higher is better. Scores only order the candidates of one
    query; they need not be comparable across queries. A backend that fails raises a
    ``HeronError`` saying what to fix."""

    def rerank(self, query: str, hits: Sequence[Hit]) -> np.ndarray: ...


#: Weights of ``FeatureReranker``, tuned on the Kubernetes dev questions (docs/benchmarks.md).
DENSE_WEIGHT = 0.25
LEXICAL_WEIGHT = 0.25
COVERAGE_WEIGHT = 0.5
TITLE_WEIGHT = 0.5


@lru_cache(maxsize=50_000)
def _terms(text: str, code: str) -> frozenset[str]:
    # Candidates recur across queries; analysing 100 chunks costs ~10 ms, a lookup ~0.
    return frozenset(analyze(text, code))


def _coverage(query_terms: set[str], text: str, code: str) -> float:
    """Share of the query's distinct terms (analysed as language ``code``) that occur in
    ``text`` (analysed as the same)."""
    if not query_terms:
        return 0.0
    return len(query_terms & _terms(text, code)) / len(query_terms)


def _zscore(values: np.ndarray) -> np.ndarray:
    std = values.std()
    return (values - values.mean()) / std if std > 0 else np.zeros_like(values)


class FeatureReranker:
    """The fused score plus four features, no model call::

        score = fused + 0.25 z(cosine) + 0.25 z(bm25) + 0.5 coverage(chunk)
                + 0.5 coverage(title and heading path)

    ``z`` is the standard score over this query's candidates; coverage is the share of
    the query's distinct analysed terms found in the text. The store's fusion leans on
    the dense side after its feedback pass; the z terms give each side back a say, and
    coverage rewards the chunk that answers the whole question rather than the one that
    repeats a rare term (BM25's bias), and the page whose title says what was asked.
    """

    def __init__(
        self,
        dense: float = DENSE_WEIGHT,
        lexical: float = LEXICAL_WEIGHT,
        coverage: float = COVERAGE_WEIGHT,
        title: float = TITLE_WEIGHT,
    ) -> None:
        self.weights = np.array([1.0, dense, lexical, coverage, title], dtype=np.float32)

    def rerank(self, query: str, hits: Sequence[Hit]) -> np.ndarray:
        # Each hit is read in its own language, and the query as each hit's language
        # reads it (heron.store.analysis); English pages alone read it as English alone.
        languages = [record_language(h.metadata) for h in hits]
        asked = {code: set(query_terms(query, (code,))) for code in set(languages)}
        terms = set(query_terms(query, sorted(asked))) if hits else set()
        # The word features weigh as much of the query as the candidates can read
        # (``readable``): a question in another language than the pages matches a few
        # of their words by accident, and those matches say nothing.
        texts = zip(hits, languages, strict=True)
        vocabulary = set().union(*(_terms(h.text, code) for h, code in texts))
        read = readable(len(terms & vocabulary), len(terms))
        weights = self.weights * np.array([1.0, 1.0, read, read, read], dtype=np.float32)
        features = np.zeros((len(hits), 5), dtype=np.float32)
        for i, (hit, code) in enumerate(zip(hits, languages, strict=True)):
            title = f"{hit.metadata.get('title', '')} {hit.metadata.get('heading', '')}"
            features[i] = (
                hit.score,
                hit.dense_score or 0.0,
                hit.lexical_score or 0.0,
                _coverage(asked[code], hit.text, code),
                _coverage(asked[code], title, code),
            )
        if len(hits):
            features[:, 1] = _zscore(features[:, 1])
            features[:, 2] = _zscore(features[:, 2])
        return features @ weights


RERANKERS = ("default", "none", "onnx", "remote")


def load_reranker(library: LibrarySettings) -> Reranker | None:
    """The reranker ``HERON_LIBRARY_RERANKER`` (``library.reranker``) names; ``None`` for
    ``none``."""
    if library.reranker == "default":
        return FeatureReranker()
    if library.reranker == "none":
        return None
    if library.reranker == "onnx":
        if library.rerank_model is None:
            raise ConfigError(
                "HERON_LIBRARY_RERANKER=onnx needs HERON_LIBRARY_RERANK_MODEL=/path/to/model.onnx "
                "(with tokenizer.json in the same folder)."
            )
        from heron.libraries.rerank_onnx import OnnxCrossEncoder

        return OnnxCrossEncoder(library.rerank_model)
    if library.reranker == "remote":
        if not library.rerank_url:
            raise ConfigError(
                "HERON_LIBRARY_RERANKER=remote needs HERON_LIBRARY_RERANK_URL, e.g. "
                "http://127.0.0.1:8080 (a TEI, Infinity or Cohere-style /rerank server)."
            )
        from heron.libraries.rerank_remote import RemoteReranker

        return RemoteReranker(
            library.rerank_url,
            model=library.rerank_model_name,
            api_key=library.rerank_api_key,
            timeout=library.rerank_timeout,
        )
    raise ConfigError(
        f"Unknown reranker {library.reranker!r}. Choose from: {', '.join(RERANKERS)}."
    )
