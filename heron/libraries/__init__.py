"""Libraries: Markdown documentation indexed incrementally and searched with citations.

>>> from heron.libraries import add_library, index_library, search    # doctest: +SKIP
>>> add_library("k8s", "/srv/docs/kubernetes", settings)
>>> index_library("k8s", store, settings=settings)
>>> search("why do my service ports keep changing", store, settings=settings)[0].citation
'(k8s, concepts/services-networking/service)'

What a library remembers between runs (pages, last sync, last index, a failed sync) is
read with ``library_state(store, name)`` (``heron.libraries.state``), never by its keys.
"""

from __future__ import annotations

from heron.libraries.config import Library, add_library, read_libraries, remove_library
from heron.libraries.enrich import QA, Enricher
from heron.libraries.index import LibraryIndexReport, index_library
from heron.libraries.rerank import FeatureReranker, Reranker, load_reranker
from heron.libraries.search import (
    MODES,
    Result,
    named,
    scope_of,
    scopes,
    search,
    search_many,
    sections,
)
from heron.libraries.state import LibraryState, library_state

__all__ = [
    "MODES",
    "QA",
    "Enricher",
    "FeatureReranker",
    "Library",
    "LibraryIndexReport",
    "LibraryState",
    "Reranker",
    "Result",
    "add_library",
    "index_library",
    "library_state",
    "load_reranker",
    "named",
    "read_libraries",
    "remove_library",
    "scope_of",
    "scopes",
    "search",
    "search_many",
    "sections",
]
