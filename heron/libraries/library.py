"""A library's life as users see it: add, remove (config, index and checkout), status,
one indexed page read back whole (``read_page``: a document as the Markdown Heron read
from it) and a document's original file (``read_original``)."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import asdict, dataclass, field
from typing import Any

from heron.core.errors import ToolInputError
from heron.core.files import PathRefused, folder, read_regular
from heron.core.workspace import Workspace
from heron.errors import HeronError, NotFound
from heron.libraries.config import (
    Library,
    elsewhere,
    get_library,
    read_libraries,
    remove_library,
)
from heron.libraries.index import outdated_note
from heron.libraries.readers import Format, Unreadable, format_of, read
from heron.libraries.scan import size_limit
from heron.libraries.state import incomplete_note, last_sync, library_state
from heron.libraries.sync import checkout_dir, qa_fallback_dir
from heron.programs import load_policy
from heron.settings import Settings
from heron.store import Store, check_store


@dataclass
class LibraryStatus:
    name: str
    source: str
    kind: str  # git or local
    builtin: bool
    indexed: bool
    pages: int
    chunks: int
    questions: int
    last_sync: float | None
    revision: str | None
    last_error: str | None
    last_error_at: float | None
    #: From the last index run: files that are not pages, and why (a FIFO, a symlink
    #: leaving the library, over the size limit ...), ``{"path", "reason"}``; and what
    #: it warned of (a refused or cut Q&A cache, bad UTF-8 ...).
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Documents with pages that hold an image and no text (scans, not indexed):
    #: ``{"path", "page", "pages"}``.
    scanned: list[dict[str, Any]] = field(default_factory=list)
    #: While an index run that started writing has not finished: what that means and
    #: how to finish (``incomplete_note``); ``None`` once one has.
    incomplete: str | None = None
    #: While its last finished run was an earlier index version's: what that means and
    #: how to re-index (``heron.libraries.index.outdated_note``); ``None`` otherwise.
    outdated: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def library_status(library: Library, store: Store) -> LibraryStatus:
    name = library.name
    indexed = any(info.name == name for info in store.namespaces())
    ids = store.ids(name) if indexed else []
    questions = sum(1 for i in ids if i.rsplit("#", 1)[-1].startswith("q"))
    state = library_state(store, name)
    error_at, error = state.sync_error or (None, None)
    return LibraryStatus(
        name=name,
        source=library.source,
        kind="git" if library.is_git else "local",
        builtin=library.builtin,
        indexed=indexed,
        pages=len(state.pages),
        chunks=len(ids) - questions,
        questions=questions,
        last_sync=state.synced_at,
        revision=state.revision,
        last_error=error,
        last_error_at=error_at,
        incomplete=incomplete_note(store, name),
        outdated=outdated_note(store, name),
        skipped=list(state.last_index.get("skipped", [])),
        warnings=list(state.last_index.get("warnings", [])),
        scanned=list(state.last_index.get("scanned", [])),
    )


def statuses(store: Store, settings: Settings, name: str | None = None) -> list[LibraryStatus]:
    """The status of one library or all; a damaged store raises ``DatabaseCorrupt`` rather
    than report counts read around the damage."""
    libraries = [get_library(name, settings)] if name else read_libraries(settings)
    check_store(store)
    return [library_status(lib, store) for lib in libraries]


def forget_library(name: str, store: Store, settings: Settings) -> Library:
    """Remove from ``libraries.txt`` first (a running indexer then stops and cleans up),
    then drop the index, its state, any git checkout and the Q&A caches Heron kept for
    it (``qa_fallback_dir``; never those in the library's own folder). A library another
    context's list still names (shared by configuration, ``heron.libraries.config``)
    keeps all of them: they are that context's too."""
    library = remove_library(name, settings)
    if elsewhere(name, settings):
        return library
    with contextlib.suppress(NotFound):  # never indexed nor synced
        store.drop(name)
    shutil.rmtree(checkout_dir(library, settings), ignore_errors=True)
    shutil.rmtree(qa_fallback_dir(library, settings), ignore_errors=True)
    return library


@dataclass(frozen=True)
class PageText:
    """An indexed page's file as it is now: ``text`` cut at ``MAX_READ`` bytes."""

    library: str
    page: str
    title: str
    path: str  # from the library's root
    text: str
    truncated: bool


def _indexed(library: str, page: str, store: Store, settings: Settings) -> dict[str, Any]:
    """The metadata of ``page``'s first chunk, if the index of ``library`` (one the
    settings' context sees) holds the page."""
    get_library(library, settings)
    try:
        return store.get(library, f"{page}#0").metadata  # every indexed page has chunk 0
    except HeronError:
        raise NotFound(
            f"No page {page!r} in the index of library {library!r}; search_docs gives "
            "the pages it has."
        ) from None


def _gone(library: str, page: str) -> NotFound:
    return NotFound(
        f"The file of {library}/{page} is gone from the library's folder; run: "
        f"heron index {library}"
    )


@dataclass(frozen=True)
class Original:
    """An indexed document's file as it is now, whole (at most the page size limit)."""

    library: str
    page: str
    title: str
    path: str  # from the library's root
    format: Format
    data: bytes


def read_original(library: str, page: str, store: Store, settings: Settings) -> Original:
    """The file of ``page`` as bytes, read as the indexer reads it (from the last sync's
    folder, one component at a time, no symlink followed, a regular file, at most its
    limit, ``heron.libraries.scan.size_limit``): what ``/source/file`` serves so a PDF opens at
    its page. ``NotFound`` when the page or its file is gone."""
    meta = _indexed(library, page, store, settings)
    path = meta["path"]
    root = last_sync(store, library).get("root")
    parts = path.split("/")
    fmt = format_of(path)
    limit, setting = size_limit(
        path, settings.library.max_page_bytes, settings.library.max_document_bytes
    )
    if root is None or fmt is None:
        raise _gone(library, page)
    try:
        with folder(root, parts[:-1], path=path) as fd:
            data, _ = read_regular(fd, parts[-1], path, limit)
    except (PathRefused, OSError):
        raise _gone(library, page) from None
    if len(data) > limit:
        raise NotFound(
            f"The file of {library}/{page} is now over {setting} ({limit} bytes); run: "
            f"heron index {library}"
        )
    return Original(library, page, meta.get("title", ""), path, fmt, data)


def read_page(library: str, page: str, store: Store, settings: Settings) -> PageText:
    """The file of ``page``, a page the index of ``library`` holds, read from the folder
    its last sync used. Only indexed pages are read, through ``Workspace`` (one path
    component at a time, no symlink followed, regular files only), so no id can reach
    another file; and only of a library the settings' context sees (``get_library``).
    A document (PDF, Word, HTML ...) is read as the Markdown its reader makes, the text
    its citations' lines count. ``NotFound`` names what to do when the page or its file
    is gone."""
    meta = _indexed(library, page, store, settings)
    fmt = format_of(meta["path"])
    if fmt is not None and not fmt.markdown and fmt.place != "lines":
        original = read_original(library, page, store, settings)
        try:
            doc = read(original.data, fmt)
        except Unreadable as exc:
            raise NotFound(f"{library}/{page} cannot be read any more: {exc}") from None
        text = "\n".join(doc.lines)
        return PageText(library, page, original.title, original.path, text, False)
    root = last_sync(store, library).get("root")
    try:
        found = Workspace(root, policy=load_policy(settings.tools.policy)).read_file(meta["path"])
    except (ToolInputError, TypeError):  # no folder synced, or the file has gone
        raise _gone(library, page) from None
    return PageText(
        library, page, meta.get("title", ""), meta["path"], found["content"], found["truncated"]
    )
