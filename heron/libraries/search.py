"""Grounded search over libraries: which page, which section, which lines, and why.

``search("why do my service ports keep changing")`` embeds the query once, runs the
store's hybrid search in each library (``CANDIDATES`` chunks), re-scores the candidates
with the reranker, and groups them by page: a page scores its best chunk plus
``PAGE_BONUS`` times the rest of its matching chunks (a page that answers in several
places is more likely the page). Each ``Result`` is the page's best chunk with its
citation, ``(library, collection/page)``, and its source with the line range. A result
of a library whose last index run stopped part-way carries a ``note`` saying so
(``heron.libraries.state.incomplete_note``), whichever door asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from heron.embed import embed_queries, splits_of
from heron.errors import InputError, NotFound
from heron.language import language, text_language
from heron.libraries.config import Library, read_libraries
from heron.libraries.index import IndexBusy, index_library, outdated_note
from heron.libraries.readers import format_of
from heron.libraries.rerank import Reranker, load_reranker
from heron.libraries.shipped import read_shipped
from heron.libraries.state import incomplete_note, last_sync
from heron.settings import Settings
from heron.store import Hit, Store
from heron.store.analysis import analyze, bm25, query_terms, readable, record_language
from heron.store.fusion import RRF_K, Fused, fuse_with_feedback
from heron.translate import to_english

Mode = Literal["full", "hybrid", "dense", "lexical"]
MODES: tuple[Mode, ...] = ("full", "hybrid", "dense", "lexical")
#: Weight of a page's other matching chunks in its score (tuned on the Kubernetes dev set).
PAGE_BONUS = 0.05
#: Weight of the cosine when several libraries' candidates are fused on one scale
#: (``pool``): chosen on the Kubernetes dev questions searched beside two other libraries
#: (0.5, 0.65, 0.8 tried; docs/benchmarks.md, "Real use"). The store's own second pass
#: leans on the dense side as much (``heron.store.fusion.FEEDBACK_ALPHA``).
POOL_ALPHA = 0.8
SNIPPET_CHARS = 300
#: Chunks of a page's lead that ``sections`` looks past: a lead (summary and
#: introduction) rarely fills more than two.
LEAD_CHUNKS = 2
#: Pages whose languages decide whether a query is asked across languages (``across``):
#: the ones an extractive answer quotes from.
ACROSS_PAGES = 5
#: Pages of each list fused when a query is asked across languages (``fused_pages``),
#: whatever ``top_k`` shows: the agent's evidence pages, on which the figures were made.
ACROSS_DEPTH = 20
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
    #: The same page in other libraries (equal ``content_hash``): citation and source.
    also_in: list[dict[str, str]] = field(default_factory=list)
    #: Why the results of its library may fall short: its index is incomplete, or an
    #: earlier index version's.
    note: str | None = None
    #: The document's pages the chunk is on (a PDF's pages, a deck's slides); ``None``
    #: for a format without pages.
    pages: tuple[int, int] | None = None
    #: The language the chunk is read in (``heron.store.analysis.record_language``).
    language: str = "en"
    #: The query's English reading, searched beside it (``across``), when it was.
    english_query: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["lines"] = list(self.lines)
        data["pages"] = list(self.pages) if self.pages else None
        return data


def _snippet(text: str) -> str:
    body = text.split("\n", 1)[1] if "\n" in text else text  # drop the title > heading line
    flat = " ".join(body.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _place(path: str, pages: Sequence[int] | None, anchor: str) -> str:
    """Where in the file a link opens, by its format (``heron.libraries.readers.Format
    .place``): ``""`` for lines (the caller's own form), ``#page=N``, ``#anchor``."""
    fmt = format_of(path)
    place = fmt.place if fmt is not None else "lines"
    if place == "page" and pages:
        return f"#page={pages[0]}"
    if place == "anchor" and anchor:
        return f"#{anchor}"
    return "" if place == "lines" else "#"


def source_location(
    sync: dict[str, Any],
    path: str,
    lines: tuple[int, int],
    pages: Sequence[int] | None = None,
    anchor: str = "",
) -> str:
    """A link a person can open: a web URL with line anchors for GitHub-like hosts,
    ``URL@revision:path:first-last`` for other git remotes, ``/abs/path:first-last``
    for local libraries. A document whose lines are not the file's (a PDF, a Word file,
    an HTML page) is linked at its page (``manual.pdf#page=12``), its heading's anchor
    (``backups.html#restore``) or as the file alone."""
    first, last = lines
    url, revision = sync.get("url"), sync.get("revision")
    place = _place(path, pages, anchor)
    if place:
        at = place.removesuffix("#")  # "#": the file alone
        if url and revision and _WEB_GIT.match(url):
            return f"{url.removesuffix('.git')}/blob/{revision}/{path}{at}"
        if url:
            return f"{url}@{revision or 'HEAD'}:{path}{at}"
        return f"{sync.get('root', '')}/{path}{at}"
    if url and revision and _WEB_GIT.match(url):
        return f"{url.removesuffix('.git')}/blob/{revision}/{path}#L{first}-L{last}"
    if url:
        return f"{url}@{revision or 'HEAD'}:{path}:{first}-{last}"
    return f"{sync.get('root', '')}/{path}:{first}-{last}"


def _result(hit: Hit, score: float, rerank: float | None, sync: dict[str, Any]) -> Result:
    meta = hit.metadata
    question = meta.get("kind") == "question"
    lines = tuple(meta.get("lines") or (1, 1))
    pages = tuple(meta["pages"]) if meta.get("pages") else None
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
        source=source_location(sync, meta.get("path", ""), lines, pages, meta.get("anchor", "")),
        lines=lines,
        chunk=hit.id,
        via_question=hit.text if question else None,
        pages=pages,
        language=record_language(meta),
    )


def group_by_page(
    hits: Sequence[Hit],
    scores: np.ndarray,
    syncs: Mapping[str, dict[str, Any]],
    *,
    reranked: bool = False,
    bonus: float = 0.0,
) -> list[Result]:
    """Best chunk per page, page score = best + ``bonus`` * sum of the others' positive
    scores; sorted best first. ``syncs``: each library's last sync (for source links).
    A page is ``(library, page)``: two libraries may both have an ``overview``. A paged
    document's page is one of its own pages (``(library, page, first page)``): a
    300-page manual answers at each page it does, as a shelf of pages would, and each
    result cites the page it is on."""
    pages: dict[tuple[str, str, int], list] = {}  # -> [best hit, score, others' sum, matches]
    for i in np.argsort(-scores, kind="stable").tolist():
        meta = hits[i].metadata
        at = (meta.get("pages") or [0])[0]
        page = (meta.get("library", ""), meta.get("page", hits[i].id), at)
        if page in pages:
            pages[page][2] += max(float(scores[i]), 0.0)
            pages[page][3] += 1
        else:
            pages[page] = [hits[i], float(scores[i]), 0.0, 1]
    results = []
    for hit, score, others, matches in pages.values():
        sync = syncs.get(hit.metadata.get("library", ""), {})
        result = _result(hit, score + bonus * others, score if reranked else None, sync)
        result.matches = matches
        results.append(result)
    results.sort(key=lambda r: -r.score)
    return results


def merge_copies(results: Sequence[Result]) -> list[Result]:
    """One result per page text: a page indexed twice (equal ``content_hash``, e.g. a
    copy of the same docs in two libraries) is listed once, at its best place, with the
    other copies' citations and sources in ``also_in``."""
    kept: dict[tuple[str, int], Result] = {}
    merged = []
    for result in results:
        key = (result.content_hash, result.pages[0] if result.pages else 0)
        first = kept.get(key) if result.content_hash else None
        if first is None:
            kept[key] = result
            merged.append(result)
        else:
            first.also_in.append({"citation": result.citation, "source": result.source})
    return merged


def named(text: str, names: Iterable[str]) -> str | None:
    """The first of ``names`` that ``text`` contains as a whole word, any case.

    >>> named("How do Kubernetes services work?", ["heron", "kubernetes"])
    'kubernetes'
    """
    for name in names:
        if name and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
            return name
    return None


def scope_of(query: str, libraries: Sequence[Library]) -> list[str]:
    """The libraries a search for ``query`` reads when none is chosen, from the indexed
    ``libraries``: the user's own, never mixed with Heron's built-in docs; those alone
    when the query names them (it is about Heron) or when they are all there is. One
    rule for every door: ``heron search``, ``heron ask``, ``agent.chat``, ``/v1``, MCP
    and the web page."""
    builtin = [lib.name for lib in libraries if lib.builtin]
    own = [lib.name for lib in libraries if not lib.builtin]
    if builtin and (not own or named(query, builtin)):
        return builtin
    return own


def _indexed(store: Store, settings: Settings) -> list[Library]:
    indexed = {info.name for info in store.namespaces()}
    libraries = read_libraries(settings)
    for lib in libraries:
        if lib.builtin and lib.name not in indexed and _load_shipped(lib, store, settings):
            indexed.add(lib.name)
    return [lib for lib in libraries if lib.name in indexed]


def _load_shipped(library: Library, store: Store, settings: Settings) -> bool:
    """Index a built-in library that is not indexed yet, when it ships its pages for the
    store's embedder, every one current (``heron.libraries.shipped``): nothing is embedded,
    so a new home answers about Heron from its docs at once. Whether it is indexed now."""
    embedder = store.embedder
    if read_shipped(Path(library.source), embedder.model_id, embedder.dim) is None:
        return False
    try:
        report = index_library(library.name, store, settings=settings, shipped_only=True)
    except IndexBusy:  # another process is indexing it: searched once it is done
        return False
    return report.error is None


def _check_library(store: Store, library: str, settings: Settings) -> None:
    configured = [lib.name for lib in read_libraries(settings)]
    if library not in configured:
        raise NotFound(
            f"No library {library!r} (libraries: {', '.join(configured) or 'none yet'})."
        )
    if library not in {info.name for info in store.namespaces()}:
        raise NotFound(f"Library {library!r} is not indexed yet; run: heron index {library}")


def chosen(library: str | Sequence[str] | None) -> list[str]:
    """The libraries a caller chose, each once, in its order: ``"k8s"`` -> ``["k8s"]``,
    ``["a", "b", "a"]`` -> ``["a", "b"]``; none (``None`` or ``[]``) -> ``[]``."""
    if library is None:
        return []
    return [library] if isinstance(library, str) else list(dict.fromkeys(library))


def scopes(
    queries: Sequence[str],
    store: Store,
    settings: Settings,
    library: str | Sequence[str] | None = None,
) -> list[list[str]]:
    """The libraries each query is searched in: ``library`` when given (one name or
    several), else ``scope_of``. Raises ``NotFound`` for an unknown or unindexed
    ``library``, or when no library is indexed."""
    names = chosen(library)
    if names:
        for name in names:
            _check_library(store, name, settings)
        return [list(names) for _ in queries]
    libraries = _indexed(store, settings)
    if not libraries:
        raise NotFound(
            "No indexed libraries yet; run: heron library add docs ./docs && heron index docs"
        )
    return [scope_of(query, libraries) for query in queries]


def pool(
    query: str,
    hits: Sequence[Hit],
    vector: np.ndarray | None = None,
    *,
    splits: Sequence[int] = (),
    alpha: float = POOL_ALPHA,
) -> list[Hit]:
    """The candidates of several libraries on one scale, for one query.

    Each library's store scores its candidates against its own candidates (z-scores)
    and its own BM25 statistics (a term rare in a small library weighs less there), so
    their scores cannot be compared: the best passage of a ten-page library would lose
    to the fifth of a thousand-page one. Here the pooled candidates are scored as if
    they were one library, by the store's own recipe: the cosine as it is (the same
    embedder everywhere), BM25 again with the IDF of the pool, the same z-score fusion
    over the union, then the store's Rocchio feedback from the top candidate and a second
    fusion (``heron.store.fusion.fuse_with_feedback``: the query's ``vector`` and each
    hit's, which a hybrid search hands over; ``splits``: the embedder's). Without the
    feedback pass a library's passages were ordered unlike the store orders them alone:
    every/named Hit@1 0.941 -> 0.971 on the Kubernetes dev questions beside two other
    libraries (docs/benchmarks.md, "Real use"). The lexical side weighs as much of the
    query as the candidates' words can read (``heron.store.analysis.readable``): a
    Portuguese question over English pages matched "rollback" or "proxy" by accident and
    ranked Kubernetes pages over the notes that answer it. The hits come back with these
    scores, ready for the reranker."""
    if not hits:
        return []
    # Each hit in its own language, the query in each of theirs (heron.store.analysis).
    languages = [record_language(h.metadata) for h in hits]
    terms = query_terms(query, sorted(set(languages)))
    texts = [analyze(h.text, code) for h, code in zip(hits, languages, strict=True)]
    vocabulary = set().union(*texts)
    alpha = 1 - (1 - alpha) * readable(sum(t in vocabulary for t in terms), len(terms))
    lexical = bm25(terms, texts).astype(np.float64)
    dense = np.array([h.dense_score or 0.0 for h in hits], dtype=np.float64)
    keys = np.arange(len(hits), dtype=np.int64)
    by_dense = np.argsort(-dense, kind="stable")
    by_lexical = np.argsort(-lexical, kind="stable")
    if vector is None:  # lexical search: BM25 alone orders
        fused = [
            Fused(int(k), float(lexical[k]), None, float(lexical[k]), None, r)
            for r, k in enumerate(by_lexical.tolist(), 1)
        ]
    else:
        fused = fuse_with_feedback(
            vector,
            {i: h.vector for i, h in enumerate(hits) if h.vector is not None},
            keys[by_dense],
            keys[by_lexical],
            lexical[by_lexical],
            top_k=len(hits),
            alpha=alpha,
            feedback_alpha=alpha,
            splits=splits,
        )
    dense_rank, lexical_rank = np.empty_like(keys), np.empty_like(keys)
    dense_rank[by_dense] = keys + 1
    lexical_rank[by_lexical] = keys + 1
    return [
        replace(
            hits[f.key],
            score=f.score,
            lexical_score=float(lexical[f.key]),
            rank=rank,
            dense_rank=int(dense_rank[f.key]),
            lexical_rank=int(lexical_rank[f.key]),
        )
        for rank, f in enumerate(fused, 1)
    ]


def search_many(
    queries: Sequence[str],
    store: Store,
    *,
    settings: Settings,
    library: str | Sequence[str] | None = None,
    collection: str | None = None,
    top_k: int = 10,
    mode: Mode = "full",
    reranker: Reranker | None = None,
    vectors: np.ndarray | None = None,
    translate: bool | None = None,
) -> list[list[Result]]:
    """``search`` for many queries; the queries are embedded in one batch (``vectors``,
    one row per query, skips that). A long-lived caller (a server) passes the
    ``reranker`` once made. ``library``: one library, or several searched together (their
    candidates on one scale, ``pool``); none: ``scope_of`` each query. ``translate``
    (default ``HERON_LIBRARY_TRANSLATE``): a query asked across languages is searched in
    English too (``across``)."""
    if mode not in MODES:
        raise InputError(f"Unknown search mode {mode!r}. Choose from: {', '.join(MODES)}.")
    if top_k < 1:
        raise InputError(f"top_k must be at least 1, got {top_k}.")
    if mode == "full" and reranker is None:
        reranker = load_reranker(settings.library)
    translating = settings.library.translate if translate is None else translate
    # Both lists of a query asked across languages are fused deeper than the pages shown:
    # two short lists fused pick by rank among a few (an MCP client's top_k=2 got the
    # question's hub page over the page both lists hold).
    depth = max(top_k, ACROSS_DEPTH) if translating else top_k
    names = scopes(queries, store, settings, library)
    if vectors is None and mode != "lexical":
        vectors = embed_queries(store.embedder, list(queries))
    filters = {"collection": collection} if collection else None
    store_mode = "hybrid" if mode == "full" else mode
    found: list[list[Hit]] = [[] for _ in queries]
    syncs: dict[str, dict[str, Any]] = {}
    notes: dict[str, str | None] = {}
    for name in dict.fromkeys(n for scope in names for n in scope):
        asked = [i for i, scope in enumerate(names) if name in scope]
        syncs[name] = last_sync(store, name)
        notes[name] = incomplete_note(store, name) or outdated_note(store, name)
        per_query = store.search_many(
            name,
            [queries[i] for i in asked],
            mode=store_mode,
            top_k=max(settings.library.candidates, top_k),
            filters=filters,
            vectors=None if vectors is None else vectors[asked],
        )
        for i, hits in zip(asked, per_query, strict=True):
            found[i] += hits
    results = []
    splits = splits_of(store.embedder)
    for i, (query, scope, hits) in enumerate(zip(queries, names, found, strict=True)):
        if len(scope) > 1 and mode != "dense":  # a cosine means the same in every library
            vector = None if mode == "lexical" or vectors is None else vectors[i]
            hits = pool(query, hits, vector, splits=splits)
        use = mode == "full" and reranker is not None and bool(hits)
        scores = (
            reranker.rerank(query, hits)
            if use
            else np.array([h.score for h in hits], dtype=np.float32)
        )
        bonus = PAGE_BONUS if mode == "full" else 0.0
        pages = group_by_page(hits, scores, syncs, reranked=use, bonus=bonus)
        kept = merge_copies(pages)[:depth]
        for result in kept:
            result.note = notes.get(result.library)
        results.append(kept)
    if translating:
        for i, (query, scope) in enumerate(zip(queries, names, strict=True)):
            english = across(query, results[i])
            if english is None:
                results[i] = results[i][:top_k]
                continue
            # The reading is searched where the query was, whatever names it holds.
            [found_english] = search_many(
                [english],
                store,
                settings=settings,
                library=scope,
                collection=collection,
                top_k=depth,
                mode=mode,
                reranker=reranker,
                translate=False,
            )
            fused = fused_pages(results[i], found_english)[:top_k]
            results[i] = [replace(r, english_query=english) for r in fused]
    return results


def across(query: str, results: Sequence[Result]) -> str | None:
    """``query``'s English reading (``heron.translate``) when it is asked across
    languages: written in another language than English, and none of the first
    ``ACROSS_PAGES`` pages it found is in that language. ``None`` otherwise, and where no
    translation is installed for its language.

    A page in the query's language among the first is what the libraries hold in it: a
    Portuguese manual with some sections still in English is searched as written (its
    English reading there cost Hit@1 0.932 -> 0.864 on the Debian Reference's Portuguese
    questions, when any English page among the first five was enough to translate).

    A Portuguese or Spanish question over English pages shares no word with them and the
    multilingual model puts every page within a few hundredths of cosine of it, so a page
    near everything could win (docs/benchmarks.md, "People"); its English reading gives
    the lexical side words to match and the English model a sentence to read."""
    if not results:
        return None
    asked = language(query)
    if asked == "en" or any(_written_in(r, asked) for r in results[:ACROSS_PAGES]):
        return None
    return to_english(query, asked)


def _written_in(result: Result, code: str) -> bool:
    """Whether ``result`` is written in ``code``: the language it is analysed in, or else
    the one its text reads as (a library's ``language=en`` analyses Portuguese pages as
    English; they are still Portuguese to a Portuguese question)."""
    return result.language == code or text_language(result.snippet) == code


def fused_pages(first: Sequence[Result], second: Sequence[Result]) -> list[Result]:
    """Two searches' pages in one ranking: reciprocal rank fusion (``sum 1 / (k + rank)``,
    ``heron.store.fusion.RRF_K``), which needs no common scale (a question and its
    translation are read by different models). The reading is searched beside the
    question, never instead of it: Apertium's English is rough, and the question's own
    words still find pages in its language. A page found by both is ``first``'s result,
    with its scores; one ``second`` alone found has no ``dense`` component: its cosine
    is the reading's, on another model's scale than the question's, which the agent's
    evidence reads (``heron.agent.triage.best_dense``).

    >>> from types import SimpleNamespace as R
    >>> a, b, c = (R(library="l", page=p) for p in "abc")
    >>> [r.page for r in fused_pages([a, b], [c, b])]
    ['b', 'a', 'c']
    """
    scores: dict[tuple[str, str], float] = {}
    kept: dict[tuple[str, str], Result] = {}
    for results in (first, second):
        for rank, result in enumerate(results, 1):
            key = (result.library, result.page)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            if key not in kept:
                reading = results is second
                kept[key] = (
                    replace(result, components={**result.components, "dense": None})
                    if reading
                    else result
                )
    return [kept[key] for key in sorted(scores, key=lambda key: -scores[key])]


def sections(
    result: Result,
    query: str,
    store: Store,
    vector: np.ndarray | None = None,
    *,
    count: int = 2,
) -> list[Result]:
    """The ``count`` sections of ``result``'s page that match ``query`` best, besides the
    one it is shown at and the page's lead (the chunks before its first heading: its
    summary and introduction), each at ``result``'s score. A page is shown at its best
    section, which is often its lead ("This page explains how to restore ...") while
    the answer is in a section below; an extractive answer reads these too."""
    hits = store.search(
        result.library,
        query,
        top_k=count + LEAD_CHUNKS + 1,
        filters={"page": result.page, "kind": "chunk"},
        vector=vector,
    )
    others = [h for h in hits if h.id != result.chunk and h.metadata.get("heading")]
    sync = last_sync(store, result.library)
    found = [_result(h, result.score, None, sync) for h in others[:count]]
    for section in found:
        section.note = result.note
    return found


def search(query: str, store: Store, **options: Any) -> list[Result]:
    """Pages that answer ``query``, best first, each at its best section with a citation.

    >>> search("rotate a certificate", store, library="kubernetes", top_k=3)  # doctest: +SKIP
    [Result(library='kubernetes', page='tasks/tls/certificate-rotation', ...)]
    """
    return search_many([query], store, **options)[0]
