"""Keeping a library's namespace in step with its pages, incrementally and crash-safely.

Records: one per chunk (``page#0``, ``page#1`` ...) and one per cached question
(``page#q0`` ...), all ids prefixed by their page id. Per page the key-value state
``page:<id>`` holds the hash the page was indexed with (its ``content_hash`` plus what
else shapes its records: the chunk policy, the model, its questions, its collection), so
a page moved to another collection (a new ``.collection`` marker) is re-written on the
next run, with no drop.

Questions (``heron.libraries.enrich``): a page's come from a Q&A cache that matches its
text; when enrichment is on (``enrich=True``, or the library's ``enrich=yes``) a page
with no matching cache, or a stale one, is asked of the ``Enricher`` once and the answer
cached, so the next run makes no model call. A failed call is reported
(``enrich_errors``) and the page indexed without questions; without enrichment a stale
cache is counted (``stale_caches``) and its questions left out.

The crash-safety rule: **a page's state is written last**. For each changed page the
indexer (1) upserts its records, (2) deletes the page's records that are no longer
produced, (3) writes ``page:<id>``. Deleted pages lose their records before their state.
Killed at any point, the next run sees a page whose state is missing or stale, and redoes
it: ids are deterministic, so records are replaced rather than duplicated, and the store
itself (not the state) says which stale records to delete. Nothing is written until the
source is synced, so a failing remote leaves the previous index searchable.

A run about to write marks the library incomplete (``mark_incomplete``) and a run that
finishes clears it (``save_index``): a run stopped part-way (Ctrl-C, a crash, an error)
leaves a library that serves the pages written so far, with a note on its results and
its status (``incomplete_note``) until the next run finishes what is left. Ctrl-C raises
``IndexInterrupted``, which says what was kept and how to finish.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from heron.errors import HeronError, NotFound
from heron.libraries.chunk import (
    ChunkPolicy,
    TokenCounter,
    chunk_page,
    policy_for,
    token_counter,
)
from heron.libraries.config import AUTO, Library, get_library, read_libraries
from heron.libraries.enrich import QA, Enricher, page_questions
from heron.libraries.parse import Page
from heron.libraries.scan import PageFile, read_page, scan
from heron.libraries.shipped import ShippedPages, read_shipped
from heron.libraries.state import (
    forget_page,
    incomplete_note,
    last_index,
    mark_incomplete,
    page_states,
    save_index,
    save_page,
    save_sync,
    save_sync_error,
)
from heron.libraries.sync import SyncError, checkout_dir, qa_fallback_dir, sync
from heron.private import private_dir
from heron.settings import Settings
from heron.store import Record, Store, check_store
from heron.store.analysis import page_language
from heron.store.sql import embed_in_steps

#: Bump when reading, chunking or record layout changes: every page is then re-indexed.
#: 4: each page's records carry the language they are analysed in (``language``),
#: detected per page. 5: a PDF is read by its paragraphs, without its running headers and
#: footers, with headings from type size where it has no bookmarks.
INDEX_VERSION = "5"
#: What ``INDEX_VERSION`` changed, in words: the note a library indexed by an earlier one
#: carries until it is re-indexed (``outdated_note``).
INDEX_CHANGE = (
    "a PDF read by its paragraphs, without its running headers and footers, with "
    "headings where it has no bookmarks (5); each page analysed for lexical search in "
    "its own language (4); an earlier index lacks what came after it, and is searched so"
)
#: Changed pages are embedded and written in groups of about this many records.
GROUP_RECORDS = 1024  # large groups sort better by length (see _Indexer._embed)
GROUP_PAGES = 128  # and at most this many pages, so the progress bar moves
#: ``stages(name, total) -> advance``: see ``index_library``.
Stages = Callable[[str, int | None], Callable[[int], None]]


class LibraryRemoved(HeronError):
    """The library was removed from libraries.txt while it was being indexed."""


class IndexBusy(HeronError):
    """Another process is indexing the same library."""


class IndexInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an index run; ``str()`` says what was kept and how to finish. Still
    a ``KeyboardInterrupt``, so whoever stops on one stops on this too."""

    def __init__(self, library: str, message: str) -> None:
        super().__init__(message)
        self.library = library

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class LibraryIndexReport:
    """What indexing one library did: pages and records, changes, model calls, errors."""

    library: str
    pages: int = 0
    records: int = 0
    added: int = 0  # pages
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0  # texts that reached the model
    shipped: int = 0  # records that came chunked and embedded with the library
    questions: int = 0
    model_calls: int = 0  # enricher calls
    stale_caches: int = 0  # pages whose Q&A cache is for another text, not regenerated
    enrich_errors: list[dict[str, str]] = field(default_factory=list)  # {"page", "error"}
    revision: str | None = None
    seconds: float = 0.0
    error: str | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Documents with pages that hold an image and no text (scans: nothing of them is
    #: indexed), ``{"path", "page", "pages"}``.
    scanned: list[dict[str, Any]] = field(default_factory=list)
    #: The index version this run wrote (``INDEX_VERSION``, read when the run starts),
    #: kept with the last report.
    version: str = field(default_factory=lambda: INDEX_VERSION)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def page_of(record_id: str) -> str:
    """``"concepts/volumes#3"`` -> ``"concepts/volumes"``."""
    return record_id.rsplit("#", 1)[0]


def page_id(path: str) -> str:
    """The page a file's path from the library's root gives: ``"guide/a.md"`` ->
    ``"guide/a"``."""
    return Path(path).with_suffix("").as_posix()


def _merged(
    last: dict[str, Any], report: LibraryIndexReport, only: frozenset[str]
) -> dict[str, Any]:
    """The report a run over the pages ``only`` leaves: its own, with what the last run
    said of the library's other pages (skipped files, warnings, scanned pages) kept."""
    merged = report.to_dict()
    merged["skipped"] = [
        s for s in last.get("skipped", []) if page_id(s["path"]) not in only
    ] + report.skipped
    merged["warnings"] = [
        w for w in last.get("warnings", []) if w.split(": ", 1)[0] not in only
    ] + report.warnings
    merged["scanned"] = [
        s for s in last.get("scanned", []) if s["page"] not in only
    ] + report.scanned
    if last:  # the other pages are as the last full run left them
        merged["version"] = last.get("version")
    return merged


def _earlier(last: Mapping[str, Any]) -> str | None:
    """The index version of the last finished run ``last``, when it is not this Heron's
    (``"3 or earlier"`` for a run before versions were kept); ``None`` when it is, or
    before the first run."""
    if not last or last.get("version") == INDEX_VERSION:
        return None
    return last.get("version") or "3 or earlier"


def outdated_note(store: Store, name: str) -> str | None:
    """What a search or a status of library ``name`` says while its last finished run was
    an earlier index version's; ``None`` otherwise. Its pages are searched as that run
    wrote them, not wrongly for their own analysis, until ``heron index`` re-indexes them.

    >>> outdated_note(store, "k8s")                                     # doctest: +SKIP
    "library 'k8s' was indexed by an earlier Heron (index version 3 or earlier; ..."
    """
    earlier = _earlier(last_index(store, name))
    if earlier is None:
        return None
    return (
        f"library {name!r} was indexed by an earlier Heron (index version {earlier}; this "
        f"one writes {INDEX_VERSION}: {INDEX_CHANGE}); re-index it with: heron index {name} "
        "(every page once; the vectors come from the embedding cache)"
    )


@contextmanager
def _exclusive(path: Path, name: str, *, wait: bool = False) -> Iterator[None]:
    """One indexer per library; the kernel drops the lock when a killed process dies.
    ``wait``: until the running one ends, rather than ``IndexBusy`` at once."""
    private_dir(path.parent)
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise IndexBusy(
                f"Library {name!r} is being indexed by another process; wait for it to finish."
            ) from exc
        yield


@dataclass
class _Work:
    """A changed page, parsed, with the records it now produces."""

    page: Page
    state: str
    records: list[Record]
    dense: list[str | None]  # per record: text to embed, None = embed record.text


def _page_work(
    file: PageFile,
    root: Path,
    page: Page,
    policy: ChunkPolicy,
    count: TokenCounter,
    pairs: list[QA],
    state: str,
    lib: str,
    language: str,
) -> _Work:
    """The page's records; ``language``: the library's ``language=`` option (``AUTO``:
    the page's own, ``page_language``), the language the store analyses them in."""
    base = {
        "library": lib,
        "collection": file.collection,
        "page": page.id,
        "title": page.title,
        "path": file.path.relative_to(root).as_posix(),
        "content_hash": page.content_hash,
        "language": page_language(page.indexed_text()) if language == AUTO else language,
    }
    records: list[Record] = []
    dense: list[str | None] = []
    for n, chunk in enumerate(chunk_page(page, policy, count)):
        meta = {
            **base,
            "kind": "chunk",
            "heading": chunk.heading,
            "anchor": chunk.anchor,
            "lines": [chunk.line_start, chunk.line_end],
        }
        if pages := page.page_range(chunk.line_start, chunk.line_end):
            meta["pages"] = list(pages)  # a PDF's pages, a deck's slides
        if n == 0 and page.description:
            # The page's summary opens its first chunk (``chunk_page``): searched with the
            # page, never quoted as an answer (``heron.agent.retrieval.Retriever.passage``).
            meta["summary"] = page.description
        records.append(Record(chunk.id, chunk.text, meta))
        dense.append(chunk.dense_text)
    for n, pair in enumerate(pairs):
        meta = {**base, "kind": "question", "answer": pair.answer, "anchor": pair.anchor}
        records.append(Record(f"{page.id}#q{n}", pair.question, meta))
        dense.append(None)
    return _Work(page, state, records, dense)


def _state_hash(page: Page, fingerprint: str, pairs: list[QA], collection: str) -> str:
    digest = hashlib.sha256(f"{page.content_hash}|{fingerprint}|{collection}".encode())
    for pair in pairs:
        digest.update(json.dumps(asdict(pair), sort_keys=True).encode())
    return digest.hexdigest()


def _misses(embedder: object) -> int | None:
    return getattr(embedder, "misses", None)


class _Indexer:
    """One run over one library; see the module docstring for the order of writes."""

    def __init__(
        self,
        library: Library,
        store: Store,
        settings: Settings,
        enricher: Enricher | None,
        progress: Callable[[int], None] | None,
        on_total: Callable[[int], None] | None,
        stages: Stages | None = None,
        only: frozenset[str] | None = None,
    ) -> None:
        self.library = library
        #: Page ids this run reads, writes and removes (files added or removed); ``None``:
        #: every page of the library.
        self.only = only
        self.ns = library.name
        self.store = store
        self.settings = settings
        self.enricher = enricher
        self.qa_fallback = qa_fallback_dir(library, settings)
        self.progress = progress
        self.on_total = on_total
        self.stages = stages
        self.report = LibraryIndexReport(library.name)
        self.policy = policy_for(
            store.embedder, settings.library.chunk_tokens, settings.library.chunk_overlap
        )
        self._counter: TokenCounter | None = None
        self.shipped: ShippedPages | None = None  # what the library ships (.heron-vectors)
        #: Write only if every changed page ships its records (``index_library``).
        self.shipped_only = False
        self.pending: tuple[int, int] | None = None  # pages to write, to remove: once known
        self.written = 0  # pages written (records, then state) by this run
        self.fingerprint = (
            f"{INDEX_VERSION}|{store.embedder.model_id}|{self.policy.max_tokens}|"
            f"{self.policy.overlap}|{library.language}"
        )

    def _count(self, texts: Sequence[str]) -> list[int]:
        if self._counter is None:  # built on first use: an unchanged library needs none
            self._counter = token_counter(self.store.embedder)
        return self._counter(texts)

    def run(self) -> LibraryIndexReport:
        self._stage("sync", None)
        try:
            checkout = sync(self.library, self.settings, timeout=self.settings.library.git_timeout)
        except SyncError as exc:
            self.report.error = str(exc)
            save_sync_error(self.store, self.ns, str(exc))
            return self.report
        self.report.revision = checkout.revision
        embedder = self.store.embedder
        self.shipped = read_shipped(checkout.root, embedder.model_id, embedder.dim)
        files, skipped = scan(
            checkout.root,
            self.settings.library.max_page_bytes,
            self.library.include,
            self.library.exclude,
            self.library.collections,
            self.settings.library.max_document_bytes,
        )
        if self.only is not None:  # the scan stats files; only these are read and parsed
            files = [f for f in files if f.id in self.only]
            skipped = [s for s in skipped if page_id(s.path) in self.only]
        self.report.skipped = [asdict(s) for s in skipped]
        states = page_states(self.store, self.ns)
        earlier = _earlier(last_index(self.store, self.ns)) if self.only is None else None
        if states and earlier is not None:
            self.report.warnings.append(
                f"every page is re-indexed once: index version {INDEX_VERSION} "
                f"({INDEX_CHANGE}) replaces version {earlier}"
            )
        stored = self._stored_ids()
        self._advance = self._stage("pages", len(files))
        work, seen = self._changed(checkout.root, files, states)
        unshipped = sum(any(r.vector is None for r in w.records) for w in work)
        if self.shipped_only and unshipped:
            self.report.error = (
                f"{unshipped} pages of {self.ns} changed since their records were shipped; "
                f"nothing written. Index it with: heron index {self.ns}"
            )
            return self.report
        gone = (set(states) | set(stored)) - seen
        if self.only is not None:
            gone &= self.only
            seen |= set(states) - gone  # the pages left as they were count as the library's
        # The sync is kept before any page is written: a run stopped part-way leaves
        # pages of this checkout, which their sources must point to (not "never synced").
        save_sync(
            self.store,
            self.ns,
            root=str(checkout.root),
            url=checkout.url,
            revision=checkout.revision,
        )
        if work or gone:  # cleared by save_index once a run finishes
            mark_incomplete(self.store, self.ns, pages=len(seen))
            self.pending = (len(work), len(gone))
        self._write(work, stored)
        self._remove(sorted(gone), stored)
        self._check_configured()
        self.report.pages = len(seen)
        self.report.records = self.store.count(self.ns) if self._exists() else 0
        return self.report

    def _exists(self) -> bool:
        return any(info.name == self.ns for info in self.store.namespaces())

    def stopped(self) -> str:
        """What a run stopped now kept, and what is left, in words."""
        name = self.ns
        finish = f"finish with: heron index {name} (it resumes; written pages are not redone)"
        if self.pending is None:  # still syncing or reading pages
            if incomplete_note(self.store, name) is None:
                return f"stopped indexing {name} before it wrote anything; its index is as it was"
            return (
                f"stopped indexing {name} before it wrote anything; it is still incomplete "
                f"from an earlier run that stopped; {finish}"
            )
        todo, gone = self.pending
        dropped = f", {gone} removed pages still to drop" if gone else ""
        return (
            f"stopped indexing {name}: {self.written} of {todo} changed pages written and "
            f"kept, {todo - self.written} still to index{dropped}. Until a run finishes, "
            f"{name} is marked incomplete (heron library status says so, its search results "
            f"carry a note); {finish}"
        )

    def _stored_ids(self) -> dict[str, list[str]]:
        by_page: dict[str, list[str]] = defaultdict(list)
        try:
            ids = self.store.ids(self.ns)
        except NotFound:
            return {}
        for record_id in ids:
            by_page[page_of(record_id)].append(record_id)
        return by_page

    def _changed(
        self, root: Path, files: list[PageFile], states: dict[str, str]
    ) -> tuple[list[_Work], set[str]]:
        """Parse every page (cheap) and chunk only those whose state hash changed."""
        work: list[_Work] = []
        seen: set[str] = set()
        for file in files:
            self._advance(1)
            page = self._read(root, file, seen)
            if page is None:
                continue
            seen.add(page.id)
            pairs = self._questions(root, page)
            state = _state_hash(page, self.fingerprint, pairs, file.collection)
            if states.get(page.id) == state:
                self.report.unchanged += 1
                continue
            if page.id in states:
                self.report.changed += 1
            else:
                self.report.added += 1
            work.append(self._work(root, file, page, pairs, state))
        return work, seen

    def _read(self, root: Path, file: PageFile, seen: set[str]) -> Page | None:
        """``file``'s page, its warnings and scanned pages reported; None, reported as
        skipped, for a file refused or unreadable (whose id goes in ``seen``: a read
        error may pass, so what is indexed of it is kept meanwhile)."""
        shown = file.path.relative_to(root).as_posix()  # as the scan names a skipped file
        try:
            page, refused = read_page(
                file,
                self.settings.library.max_page_bytes,
                self.settings.library.max_document_bytes,
                self.settings.library.ocr_languages if self.settings.library.ocr else None,
            )
        except OSError as exc:
            self.report.skipped.append({"path": shown, "reason": f"unreadable: {exc}"})
            seen.add(file.id)
            return None
        if page is None:
            self.report.skipped.append({"path": shown, "reason": refused or ""})
            return None
        self.report.warnings += [f"{file.id}: {w}" for w in page.warnings]
        if page.scanned:
            self.report.scanned.append({"path": shown, "page": page.id, "pages": page.scanned})
        return page

    def _questions(self, root: Path, page: Page) -> list[QA]:
        """The questions ``page`` is also found by (``page_questions``), each model call,
        stale cache and error reported."""
        asked = page_questions(
            root,
            page,
            self.enricher,
            self.qa_fallback,
            max_pairs=self.settings.library.enrich_questions,  # a generated cache's cap
        )
        self.report.warnings += [f"{page.id}: {note}" for note in asked.notes]
        pairs = asked.pairs
        self.report.model_calls += asked.calls
        self.report.questions += len(pairs)
        self.report.stale_caches += asked.stale
        if asked.error is not None:
            self.report.enrich_errors.append({"page": page.id, "error": asked.error})
        return pairs

    def _work(self, root: Path, file: PageFile, page: Page, pairs: list[QA], state: str) -> _Work:
        """The records of a changed ``page``: shipped ones where the package holds them for
        this very state (chunked and embedded already), else chunked now."""
        shipped = self.shipped and self.shipped.records(page.id, state, self.ns)
        if shipped:
            self.report.shipped += len(shipped)
            return _Work(page, state, shipped, [None] * len(shipped))
        return _page_work(
            file,
            root,
            page,
            self.policy,
            self._count,
            pairs,
            state,
            self.ns,
            self.library.language,
        )

    def _groups(self, work: list[_Work]) -> Iterator[list[_Work]]:
        group: list[_Work] = []
        for item in work:
            group.append(item)
            if len(group) >= GROUP_PAGES or sum(len(w.records) for w in group) >= GROUP_RECORDS:
                yield group
                group = []
        if group:
            yield group

    def _stage(self, name: str, total: int | None) -> Callable[[int], None]:
        return self.stages(name, total) if self.stages else lambda n: None

    def _write(self, work: list[_Work], stored: dict[str, list[str]]) -> None:
        if self.on_total:
            self.on_total(len(work))
        load = getattr(self.store.embedder, "prepare", None)  # a model made on first use
        unembedded = any(r.vector is None for w in work for r in w.records)  # not shipped
        if unembedded and load is not None:  # ... would hold the chunk bar at 0 while it loads
            self._stage("models", None)
            load()
        advance = self._stage("chunks", sum(len(w.records) for w in work))
        before = _misses(self.store.embedder)
        for group in self._groups(work):
            self._check_configured()
            embedded = self._embed(group, advance)
            records = [r for w in group for r in w.records]
            self.store.upsert(self.ns, records)  # embeds the questions (no dense text)
            self._check_configured()  # removed meanwhile: drop what this group re-created
            stale = []
            for item in group:
                fresh = {r.id for r in item.records}
                stale += [i for i in stored.get(item.page.id, []) if i not in fresh]
            if stale:
                self.store.delete(self.ns, stale)
            for item in group:  # last: see the crash-safety rule
                save_page(self.store, self.ns, item.page.id, item.state)
                self.written += 1
            if self.progress:
                self.progress(len(group))
            if len(records) > embedded:  # the questions, and texts repeated in the group
                advance(len(records) - embedded)
        after = _misses(self.store.embedder)
        if before is not None and after is not None:
            self.report.embedded += after - before

    def _embed(self, group: list[_Work], advance: Callable[[int], None]) -> int:
        """Vectors of the chunks' dense texts, each distinct text embedded once, sorted
        by length across the whole group and told to ``advance`` step by step as they
        embed (``embed_in_steps``). Returns how many texts that was."""
        texts = list(dict.fromkeys(t for w in group for t in w.dense if t is not None))
        if not texts:
            return 0
        if _misses(self.store.embedder) is None:
            self.report.embedded += len(texts)
        embedded = embed_in_steps(self.store.embedder, texts, advance)
        vectors = dict(zip(texts, embedded, strict=True))
        for item in group:
            for record, text in zip(item.records, item.dense, strict=True):
                if text is not None:
                    record.vector = vectors[text]
        return len(texts)

    def _remove(self, pages: list[str], stored: dict[str, list[str]]) -> None:
        if not pages:
            return
        self._check_configured()
        ids = [record_id for page in pages for record_id in stored.get(page, [])]
        if ids:
            self.store.delete(self.ns, ids)
        for page in pages:  # records first, state last
            forget_page(self.store, self.ns, page)
        self.report.removed = len(pages)

    def _check_configured(self) -> None:
        if any(lib.name == self.ns for lib in read_libraries(self.settings)):
            return
        if self._exists():
            self.store.drop(self.ns)
        raise LibraryRemoved(f"Library {self.ns!r} was removed while indexing; stopped.")


def index_library(
    name: str,
    store: Store,
    *,
    settings: Settings,
    enricher: Enricher | None = None,
    enrich: bool | None = None,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    stages: Stages | None = None,
    only: Collection[str] | None = None,
    wait: bool = False,
    shipped_only: bool = False,
) -> LibraryIndexReport:
    """Sync and index one library. ``progress(n)`` is called as ``n`` more changed pages
    are written; ``on_total(n)`` once with the number of changed pages. ``stages(name,
    total)`` as each stage begins (``sync``, total None; ``pages`` to read; ``models``,
    total None, while an embedder with ``prepare()`` loads what it would on first use;
    then ``chunks`` to embed and write) returns the ``advance(n)`` told as ``n`` more of its
    units are done: chunks as they embed, every second or so, not only as a group of
    pages is written.

    ``enricher`` generates the questions of pages without a matching Q&A cache when
    enrichment is on: ``enrich`` says, or (None) the library's ``enrich=`` option. Off,
    only the caches are read and ``enricher`` is not called.

    A sync failure is reported in ``LibraryIndexReport.error`` and changes nothing. A damaged
    store raises ``DatabaseCorrupt`` before anything is read or written. Ctrl-C raises
    ``IndexInterrupted`` (a ``KeyboardInterrupt``) saying what was kept; the library stays
    marked incomplete until a run finishes.

    ``only``: the page ids to read, write or remove, and no other (files just added or
    removed, ``heron.libraries.upload``): the rest of the library is neither read nor
    parsed, and what the last run said of it is kept; such a run does not make complete
    a library that a stopped run left incomplete. ``wait``: for an indexer already
    running on the library to finish, rather than ``IndexBusy``. ``shipped_only``: write
    only if every changed page ships its records (``heron.libraries.shipped``), so that
    nothing is embedded; else nothing is written and ``error`` says so.
    """
    library = get_library(name, settings)
    check_store(store)  # a run over a damaged file must not end in a report of success
    lock = checkout_dir(library, settings).with_name(f".{library.name}.lock")
    started = time.perf_counter()
    pages = None if only is None else frozenset(only)
    with _exclusive(lock, library.name, wait=wait):
        unfinished = pages is not None and incomplete_note(store, library.name) is not None
        wanted = library.enrich if enrich is None else enrich
        asker = enricher if wanted else None
        indexer = _Indexer(library, store, settings, asker, progress, on_total, stages, pages)
        indexer.shipped_only = shipped_only
        try:
            report = indexer.run()
        except KeyboardInterrupt:
            raise IndexInterrupted(library.name, indexer.stopped()) from None
    report.seconds = time.perf_counter() - started
    if report.error is None and pages is None:
        save_index(store, library.name, report.to_dict())
    elif report.error is None and pages is not None:
        kept = _merged(last_index(store, library.name), report, pages)
        save_index(store, library.name, kept, complete=not unfinished)
    return report
