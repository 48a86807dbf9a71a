"""An embedder for any OpenAI-compatible ``/v1/embeddings`` server (TEI, Ollama, vLLM, OpenAI)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from heron.embed.base import checked_output, clean_texts
from heron.errors import ModelError, RemoteModelError
from heron.resource import Resource


class RemoteEmbedder(Resource):
    """POSTs ``{"model", "input": [...]}`` to ``{base_url}/embeddings`` in batches.

    The dimension is learned from the first answer unless given. ``base_url`` includes
    the API prefix, e.g. ``http://127.0.0.1:8080/v1``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.model_id = f"remote:{model}"
        self.batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self._dim = dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = clean_texts(texts)
        parts = [
            self._request(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.empty((0, self.dim), dtype=np.float32)
        if self._dim is None:  # learned from this answer: no probe request needed
            self._dim = parts[0].shape[1]
        return checked_output(np.vstack(parts), self.dim, self.model_id)

    def _request(self, batch: list[str]) -> np.ndarray:
        where = f"{self._client.base_url}/embeddings"
        if self._client.is_closed:
            raise ModelError(
                f"The embedder for {where} was closed; load it again "
                "(heron.embed.load_embedder(settings)) to embed."
            )
        try:
            response = self._client.post("/embeddings", json={"model": self.model, "input": batch})
        except httpx.HTTPError as exc:
            raise RemoteModelError(
                f"Embedding server {where} is unreachable ({exc}). Check HERON_REMOTE_EMBED_URL "
                "and that the server is running."
            ) from exc
        if response.status_code >= 400:
            raise RemoteModelError(
                f"Embedding server {where} answered {response.status_code} for model "
                f"{self.model!r}: {response.text[:300]}"
            )
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteModelError(
                f"Embedding server {where} sent a body that is not an OpenAI embeddings "
                f"response: {response.text[:200]}"
            ) from exc
        if len(vectors) != len(batch):
            raise RemoteModelError(
                f"{where} returned {len(vectors)} vectors for {len(batch)} texts."
            )
        return vectors

    def close(self) -> None:
        """Close the HTTP connections; idempotent."""
        self._client.close()
