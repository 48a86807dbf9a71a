"""Libraries: Markdown documentation indexed incrementally and searched with citations.

>>> from heron.libraries import add_library, index_library, search    # doctest: +SKIP
>>> add_library("k8s", "/srv/docs/kubernetes")
>>> index_library("k8s", store)
>>> search("why do my service ports keep changing", store)[0].citation
'(k8s, concepts/services-networking/service)'
"""

from __future__ import annotations

from heron.deprecated import renamed
from heron.libraries.config import Library, add_library, read_libraries, remove_library
from heron.libraries.enrich import QA, Enricher
from heron.libraries.index import LibraryIndexReport, index_library
from heron.libraries.rerank import FeatureReranker, Reranker, load_reranker
from heron.libraries.search import MODES, Result, search, search_many

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
