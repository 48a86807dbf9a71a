"""Text embeddings: the ``Embedder`` protocol, the bundled model, a remote client, a cache."""

from __future__ import annotations

from heron.embed.base import Embedder, embed_queries, normalize, query_space, splits_of
from heron.embed.cache import CachedEmbedder
from heron.embed.calibration import E5, MINILM, Calibration, calibration_of
from heron.embed.e5 import E5Embedder
from heron.embed.e5_onnx import ONNX_MODEL_ID, E5OnnxEmbedder, ensure_graph
from heron.embed.minilm import MiniLMEmbedder
from heron.embed.multilingual import MultilingualEmbedder
from heron.embed.remote import RemoteEmbedder
from heron.settings import Settings

__all__ = [
    "E5",
    "MINILM",
    "CachedEmbedder",
    "Calibration",
    "E5Embedder",
    "E5OnnxEmbedder",
    "Embedder",
    "MiniLMEmbedder",
    "MultilingualEmbedder",
    "RemoteEmbedder",
    "calibration_of",
    "embed_queries",
    "load_embedder",
    "normalize",
    "query_space",
    "splits_of",
]


def load_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for (``settings.embedder_profile``), each model behind
    the cache unless it is turned off."""
    profile = settings.embed.profile
    if profile == "remote":
        assert settings.embed.remote_url and settings.embed.remote_model  # checked by Settings
        return _cached(
            settings,
            RemoteEmbedder(
                settings.embed.remote_url,
                settings.embed.remote_model,
                api_key=settings.embed.remote_api_key,
                timeout=settings.embed.remote_timeout,
            ),
        )
    if profile == "e5":
        return _e5(settings)
    if profile == "minilm":
        return _minilm(settings)
    # Each model behind its own cache: a MiniLM vector cached before is found again.
    return MultilingualEmbedder(
        _minilm(settings), lambda: _e5(settings), ONNX_MODEL_ID, close_parts=True
    )


def _minilm(settings: Settings) -> Embedder:
    return _cached(
        settings,
        MiniLMEmbedder(
            settings.models_dir,
            batch_size=settings.embed.batch_size,
            threads=settings.embed.threads,
        ),
    )


def _e5(settings: Settings) -> Embedder:
    # The converted int8 graph: 3.4x-4.7x the engine's speed, cosine >= 0.99 to it.
    graph = ensure_graph(settings.models_dir)
    return _cached(settings, E5OnnxEmbedder(graph, threads=settings.embed.threads))


def _cached(settings: Settings, embedder: Embedder) -> Embedder:
    if not settings.embed.cache:
        return embedder
    # The cache is all the caller sees, so closing it closes the model behind it.
    return CachedEmbedder(embedder, settings.embed_cache_path, close_inner=True)
