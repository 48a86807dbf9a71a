"""What every backend checks and computes the same way before it touches its database."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import islice

import numpy as np

from heron.embed.base import Embedder, check_vectors
from heron.errors import InputError, NamespaceMismatch, NotFound
from heron.store.analysis import analyze
from heron.store.base import SEARCH_MODES, Record

#: Records per write transaction.
BATCH = 256
#: Each side of a hybrid search contributes this many candidates to the fusion.
CANDIDATES = 200
#: BM25 weights of the lexical fields (title, body); a title match says more (tuned on
#: SciFact train, see heron.store.fusion).
FIELD_WEIGHTS = (4.0, 1.0)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
FIELD = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$")


def batched(items: Iterable[Record], size: int) -> Iterator[list[Record]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def query_terms(text: str) -> list[str]:
    """The query's analysed terms, each once, in order."""
    return list(dict.fromkeys(analyze(text)))


def check_namespace_name(name: str) -> None:
    if not _NAME.match(name):
        raise InputError(
            f"Invalid namespace {name!r}: use letters, digits, '_', '-' or '.', "
            "starting with a letter or digit, at most 128 characters."
        )


def check_search(mode: str, top_k: int) -> None:
    if mode not in SEARCH_MODES:
        raise InputError(f"Unknown search mode {mode!r}. Choose from: {', '.join(SEARCH_MODES)}.")
    if top_k < 1:
        raise InputError(f"top_k must be at least 1, got {top_k}.")


def check_field(name: str) -> None:
    if not FIELD.match(name):
        raise InputError(f"Invalid filter field {name!r}: use names like 'collection'.")


def check_record(record: Record) -> Record:
    if not isinstance(record.id, str) or not record.id:
        raise InputError(f"Record id must be a non-empty string, got {record.id!r}.")
    if not isinstance(record.text, str):
        raise InputError(f"Record {record.id!r}: text must be a string.")
    if not isinstance(record.metadata, dict):
        raise InputError(f"Record {record.id!r}: metadata must be a JSON object.")
    return record


def record_vectors(embedder: Embedder, records: list[Record]) -> np.ndarray:
    """Unit vectors of ``records``: their own ``vector`` if given, else the embedder's."""
    dim = embedder.dim
    out = np.empty((len(records), dim), dtype=np.float32)
    missing = [i for i, r in enumerate(records) if r.vector is None]
    if missing:
        out[missing] = embedder.embed([records[i].text for i in missing])
    for i, record in enumerate(records):
        if record.vector is not None:
            vector = check_vectors(np.reshape(record.vector, (1, -1)), dim, f"record {record.id!r}")
            norm = float(np.linalg.norm(vector))
            if norm == 0:
                raise InputError(f"record {record.id!r}: the zero vector has no direction.")
            out[i] = vector[0] / norm
    return out


def no_namespace(name: str, known: list[str]) -> NotFound:
    hint = (
        f"namespaces: {', '.join(known)}" if known else "none yet; load one with: heron store load"
    )
    return NotFound(f"No namespace {name!r} ({hint}).")


def check_model(name: str, model_id: str, dim: int, embedder: Embedder) -> None:
    """Refuse a namespace built with another model or dimension than ``embedder``."""
    if (model_id, dim) != (embedder.model_id, embedder.dim):
        raise NamespaceMismatch(
            f"Namespace {name!r} was built with {model_id} ({dim} dims) but the embedder is "
            f"{embedder.model_id} ({embedder.dim} dims). Re-index it: "
            f"heron store drop {name}, then index it again."
        )
