"""The checks every backend makes the same way, and the errors they raise.

A store checks its arguments before it touches its database, so a bad call costs no
round trip and fails alike on every backend: ``InputError`` for what the caller can fix
in the call, ``NotFound`` and ``NamespaceMismatch`` for what the store holds.

>>> filter_terms({"collection": "tasks", "tags": ["a", "b"]})
[('collection', ['tasks']), ('tags', ['a', 'b'])]
"""

from __future__ import annotations

import json
import re
from typing import Any

from heron.embed.base import Embedder
from heron.errors import InputError, NamespaceMismatch, NotFound
from heron.store.base import SEARCH_MODES, Filters, Record

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
FIELD = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$")

#: A metadata filter as the backends render it: ``(field, values)`` pairs, all of which a
#: record must match; a record matches a pair when its field equals any of the values.
FilterTerms = list[tuple[str, list[Any]]]


def check_namespace_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
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


def filter_terms(filters: Filters | None) -> FilterTerms:
    """``filters`` checked and spelled out: a scalar means equality, a list any of its
    values; a dotted field (``source.kind``) reaches into nested objects."""
    terms: FilterTerms = []
    for field_name, value in (filters or {}).items():
        check_field(field_name)
        values = list(value) if isinstance(value, list | tuple) else [value]
        if not values:
            raise InputError(f"Filter {field_name!r} lists no values.")
        terms.append((field_name, values))
    return terms


def check_record(record: Record) -> Record:
    if not isinstance(record.id, str) or not record.id:
        raise InputError(f"Record id must be a non-empty string, got {record.id!r}.")
    if not isinstance(record.text, str):
        raise InputError(f"Record {record.id!r}: text must be a string.")
    if not isinstance(record.metadata, dict):
        raise InputError(f"Record {record.id!r}: metadata must be a JSON object.")
    return record


def metadata_json(record: Record) -> str:
    """The record's metadata as strict JSON text. NaN and infinity are refused: neither
    PostgreSQL's jsonb nor SQLite's JSON functions (which every filter runs) read them."""
    try:
        return json.dumps(record.metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"Record {record.id!r}: metadata is not valid JSON: {exc}. Use strings, "
            "numbers, booleans, null, lists and objects."
        ) from exc


def no_namespace(name: str, known: list[str]) -> NotFound:
    hint = (
        f"namespaces: {', '.join(known)}" if known else "none yet; load one with: heron store load"
    )
    return NotFound(f"No namespace {name!r} ({hint}).")


def no_record(namespace: str, id: str) -> NotFound:
    return NotFound(f"No record {id!r} in namespace {namespace!r}.")


def check_model(name: str, model_id: str, dim: int, embedder: Embedder) -> None:
    """Refuse a namespace built with another model or dimension than ``embedder``."""
    if (model_id, dim) != (embedder.model_id, embedder.dim):
        raise NamespaceMismatch(
            f"Namespace {name!r} was built with {model_id} ({dim} dims) but the embedder is "
            f"{embedder.model_id} ({embedder.dim} dims). Set HERON_EMBEDDER back to "
            f"{profile_of(model_id)}, the profile it was built with, or re-index it: "
            f"heron store drop {name}, then index it again."
        )


def profile_of(model_id: str) -> str:
    """The ``HERON_EMBEDDER`` profile whose embedder has ``model_id``, for messages."""
    if "+" in model_id:
        return "multilingual"
    if model_id.startswith("all-MiniLM"):
        return "minilm"
    if model_id.startswith("multilingual-e5"):
        return "e5"
    return "remote"
