"""Libraries: Markdown documentation indexed incrementally and searched with citations.

>>> from heron.books import add_library, index_library, search    # doctest: +SKIP
>>> add_library("k8s", "/srv/docs/kubernetes")
>>> index_library("k8s", store)
>>> search("why do my service ports keep changing", store)[0].citation
'(k8s, concepts/services-networking/service)'
"""

from __future__ import annotations

from heron.books.config import Library, add_library, read_libraries, remove_library
from heron.books.enrich import QA, Enricher
from heron.books.index import LibraryIndexReport, index_library
from heron.books.rerank import FeatureReranker, Reranker, load_reranker
from heron.books.search import MODES, Result, search, search_many
from heron.deprecated import renamed

__all__ = [
    "MODES",
    "QA",
    "Enricher",
    "FeatureReranker",
    "Library",
    "LibraryIndexReport",
    "Reranker",
    "Result",
    "add_library",
    "index_library",
    "load_reranker",
    "read_libraries",
    "remove_library",
    "search",
    "search_many",
]

__getattr__ = renamed(__name__, {"IndexReport": "LibraryIndexReport"})
