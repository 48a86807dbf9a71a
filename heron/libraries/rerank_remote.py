"""A ``Reranker`` for a cross-encoder served over HTTP: TEI, Infinity or Cohere ``/rerank``.

Request: ``POST {base_url}/rerank``. Without a model name (TEI serves one model) the body
is TEI's ``{"query", "texts"}``; with one it is the Cohere/Infinity form
``{"model", "query", "documents", "top_n"}``. Both answers are understood: TEI's list of
``{"index", "score"}`` and Cohere/Infinity's ``{"results": [{"index", "relevance_score"}]}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from heron.errors import RemoteModelError
from heron.store import Hit


class RemoteReranker:
    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.model is None:
            return {"query": query, "texts": texts, "raw_scores": False}
        return {"model": self.model, "query": query, "documents": texts, "top_n": len(texts)}

    def rerank(self, query: str, hits: Sequence[Hit]) -> np.ndarray:
        if not hits:
            return np.empty(0, dtype=np.float32)
        url = f"{self._client.base_url}/rerank"
        try:
            response = self._client.post("/rerank", json=self._body(query, [h.text for h in hits]))
        except httpx.HTTPError as exc:
            raise RemoteModelError(
                f"The rerank server at {url} did not answer: {exc}. Start it, or set "
                "HERON_LIBRARY_RERANKER=default to rank without it."
            ) from exc
        if response.status_code != 200:
            raise RemoteModelError(
                f"The rerank server at {url} answered {response.status_code}: "
                f"{response.text[:200]}. Check HERON_LIBRARY_RERANK_URL and _MODEL_NAME."
            )
        try:
            data = response.json()
            items = data["results"] if isinstance(data, dict) else data
            scores = np.full(len(hits), np.nan, dtype=np.float32)
            for item in items:
                score = item["relevance_score"] if "relevance_score" in item else item["score"]
                scores[int(item["index"])] = float(score)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise RemoteModelError(
                f"The rerank server at {url} sent an answer that is not TEI, Infinity or Cohere "
                f"rerank JSON ({exc!r}): {response.text[:200]}"
            ) from exc
        if np.isnan(scores).any():
            raise RemoteModelError(f"The rerank server at {url} left some candidates unscored.")
        return scores
