"""Grounded search over libraries: which page, which section, which lines, and why.

``search("why do my service ports keep changing")`` embeds the query once, runs the
store's hybrid search in each library (``CANDIDATES`` chunks), re-scores the candidates
with the reranker, and groups them by page: a page scores its best chunk plus
``PAGE_BONUS`` times the rest of its matching chunks (a page that answers in several
places is more likely the page). Each ``Result`` is the page's best chunk with its
citation, ``(library, collection/page)``, and its source with the line range.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from heron.deprecated import settings_or_default
from heron.embed import embed_queries
from heron.errors import InputError, NotFound
from heron.libraries.config import read_libraries
from heron.libraries.rerank import Reranker, load_reranker
from heron.libraries.state import last_sync
from heron.settings import Settings
from heron.store import Hit, Store

Mode = Literal["full", "hybrid", "dense", "lexical"]
MODES: tuple[Mode, ...] = ("full", "hybrid", "dense", "lexical")
#: Weight of a page's other matching chunks in its score (tuned on the Kubernetes dev set).
PAGE_BONUS = 0.05
SNIPPET_CHARS = 300
_WEB_GIT = re.compile(r"^https://(github\.com|gitlab\.com|codeberg\.org)/")


@dataclass
class Result:
    """One page that answers the query, at its best-matching section."""

    library: str
    collection: str
    page: str
    title: str
    heading: str
    anchor: str
    snippet: str
    score: float
    components: dict[str, float | None]
    content_hash: str
    citation: str
    source: str
    lines: tuple[int, int]
    chunk: str
    matches: int = 1  # the page's chunks among the candidates
    via_question: str | None = None  # the indexed question that matched, if one did

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["lines"] = list(self.lines)
        return data


def _snippet(text: str) -> str:
    body = text.split("\n", 1)[1] if "\n" in text else text  # drop the title > heading line
    flat = " ".join(body.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"


def source_location(sync: dict[str, Any], path: str, lines: tuple[int, int]) -> str:
    """A link a person can open: a web URL with line anchors for GitHub-like hosts,
    ``URL@revision:path:first-last`` for other git remotes, ``/abs/path:first-last``
    for local libraries."""
    first, last = lines
    url, revision = sync.get("url"), sync.get("revision")
    if url and revision and _WEB_GIT.match(url):
        return f"{url.removesuffix('.git')}/blob/{revision}/{path}#L{first}-L{last}"
    if url:
        return f"{url}@{revision or 'HEAD'}:{path}:{first}-{last}"
    return f"{sync.get('root', '')}/{path}:{first}-{last}"


def _result(hit: Hit, score: float, rerank: float | None, sync: dict[str, Any]) -> Result:
    meta = hit.metadata
    question = meta.get("kind") == "question"
    lines = tuple(meta.get("lines") or (1, 1))
    page = meta["page"]
    return Result(
        library=meta["library"],
        collection=meta.get("collection", ""),
        page=page,
        title=meta.get("title", ""),
        heading=meta.get("heading", ""),
        anchor=meta.get("anchor", ""),
        snippet=(meta.get("answer") or hit.text) if question else _snippet(hit.text),
        score=score,
        components={
            "fused": hit.score,
            "dense": hit.dense_score,
            "lexical": hit.lexical_score,
            "rerank": rerank,
        },
        content_hash=meta.get("content_hash", ""),
        citation=f"({meta['library']}, {page})",
        source=source_location(sync, meta.get("path", ""), lines),
        lines=lines,
        chunk=hit.id,
        via_question=hit.text if question else None,
    )


def group_by_page(
    hits: Sequence[Hit],
    scores: np.ndarray,
    sync: dict[str, Any],
    *,
    reranked: bool = False,
    bonus: float = 0.0,
) -> list[Result]:
    """Best chunk per page, page score = best + ``bonus`` * sum of the others' positive
    scores; sorted best first."""
    pages: dict[str, list] = {}  # page -> [best hit, its score, others' sum, matches]
    for i in np.argsort(-scores, kind="stable").tolist():
        page = hits[i].metadata.get("page", hits[i].id)
        if page in pages:
            pages[page][2] += max(float(scores[i]), 0.0)
            pages[page][3] += 1
        else:
            pages[page] = [hits[i], float(scores[i]), 0.0, 1]
    results = []
    for hit, score, others, matches in pages.values():
        result = _result(hit, score + bonus * others, score if reranked else None, sync)
        result.matches = matches
        results.append(result)
    results.sort(key=lambda r: -r.score)
    return results


def _library_names(store: Store, library: str | None, settings: Settings) -> list[str]:
    configured = [lib.name for lib in read_libraries(settings)]
    indexed = {info.name for info in store.namespaces()}
    if library is not None:
        if library not in configured:
            raise NotFound(
                f"No library {library!r} (libraries: {', '.join(configured) or 'none yet'})."
            )
        if library not in indexed:
            raise NotFound(f"Library {library!r} is not indexed yet; run: heron index {library}")
        return [library]
    names = [name for name in configured if name in indexed]
    if not names:
        raise NotFound(
            "No indexed libraries yet; run: heron library add docs ./docs && heron index docs"
        )
    return names


def search_many(
    queries: Sequence[str],
    store: Store,
    *,
    library: str | None = None,
    collection: str | None = None,
    top_k: int = 10,
    mode: Mode = "full",
    reranker: Reranker | None = None,
    settings: Settings | None = None,
) -> list[list[Result]]:
    """``search`` for many queries; the queries are embedded in one batch.

    ``settings``: the caller's (made once; omitting them is deprecated). A long-lived
    caller (a server) passes the ``reranker`` once made too.
    """
    if mode not in MODES:
        raise InputError(f"Unknown search mode {mode!r}. Choose from: {', '.join(MODES)}.")
    if top_k < 1:
        raise InputError(f"top_k must be at least 1, got {top_k}.")
    settings = settings_or_default(settings, "heron.libraries.search")
    if mode == "full" and reranker is None:
        reranker = load_reranker(settings)
    names = _library_names(store, library, settings)
    vectors = embed_queries(store.embedder, list(queries)) if mode != "lexical" else None
    filters = {"collection": collection} if collection else None
    store_mode = "hybrid" if mode == "full" else mode
    merged: list[list[Result]] = [[] for _ in queries]
    for name in names:
        sync = last_sync(store, name)
        per_query = store.search_many(
            name,
            list(queries),
            mode=store_mode,
            top_k=max(settings.library_candidates, top_k),
            filters=filters,
            vectors=vectors,
        )
        for i, hits in enumerate(per_query):
            if not hits:
                continue
            use = mode == "full" and reranker is not None
            scores = (
                reranker.rerank(queries[i], hits)
                if use
                else np.array([h.score for h in hits], dtype=np.float32)
            )
            bonus = PAGE_BONUS if mode == "full" else 0.0
            merged[i] += group_by_page(hits, scores, sync, reranked=use, bonus=bonus)
    return [sorted(results, key=lambda r: -r.score)[:top_k] for results in merged]


def search(query: str, store: Store, **options: Any) -> list[Result]:
    """Pages that answer ``query``, best first, each at its best section with a citation.

    >>> search("rotate a certificate", store, library="kubernetes", top_k=3)  # doctest: +SKIP
    [Result(library='kubernetes', page='tasks/tls/certificate-rotation', ...)]
    """
    return search_many([query], store, **options)[0]
