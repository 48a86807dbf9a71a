"""Deprecated: the checks moved to ``heron.store.checks``, the batching, candidate and
field-weight constants and ``record_vectors`` to ``heron.store.sql``, ``query_terms`` to
``heron.store.analysis``. This alias goes in the next release."""

from __future__ import annotations

import warnings

from heron.store.analysis import query_terms
from heron.store.checks import (
    FIELD,
    check_field,
    check_model,
    check_namespace_name,
    check_record,
    check_search,
    no_namespace,
)
from heron.store.sql import BATCH, CANDIDATES, FIELD_WEIGHTS, batched, record_vectors

__all__ = [
    "BATCH",
    "CANDIDATES",
    "FIELD",
    "FIELD_WEIGHTS",
    "batched",
    "check_field",
    "check_model",
    "check_namespace_name",
    "check_record",
    "check_search",
    "no_namespace",
    "query_terms",
    "record_vectors",
]

warnings.warn(
    "heron.store.shared is deprecated: import from heron.store.checks, heron.store.sql "
    "or heron.store.analysis instead.",
    DeprecationWarning,
    stacklevel=2,
)
