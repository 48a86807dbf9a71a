"""``search_report``: what ``heron search`` prints, as one dict, wherever it is computed.

The command computes it in-process, or a running server does (``search.batch``,
``heron.server.features.local``); the command prints it the same way either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heron.libraries.rerank import Reranker
from heron.libraries.search import Mode, scopes, search_many
from heron.libraries.state import incomplete_note
from heron.settings import Settings
from heron.store import Store


def search_report(
    queries: Sequence[str],
    store: Store,
    *,
    settings: Settings,
    library: Sequence[str] | None = None,
    collection: str | None = None,
    top_k: int = 10,
    mode: Mode = "full",
    reranker: Reranker | None = None,
) -> dict[str, Any]:
    """``search_many``'s results, one list of ``Result.to_dict()`` per query, with the
    libraries the first query was searched in and why their results may fall short:
    ``{"results": [[...], ...], "searched": ["docs"], "notes": ["..."]}``."""
    results = search_many(
        queries,
        store,
        settings=settings,
        library=library,
        collection=collection,
        top_k=top_k,
        mode=mode,
        reranker=reranker,
    )
    searched = scopes(queries[:1], store, settings, library)[0]
    notes = [note for note in (incomplete_note(store, name) for name in searched) if note]
    return {
        "results": [[r.to_dict() for r in found] for found in results],
        "searched": searched,
        "notes": notes,
    }
