"""``LibraryState``: what Heron remembers about one library between runs.

It lives in the store's key-value table, in the library's namespace, and this module is
the only one that knows the keys; everything else (the indexer, the search, the status,
the agent) reads and writes it through the functions below:

- ``page:<collection>/<page>``: each indexed page's state (a hash of its content and of
  the settings that shaped its records), compared on the next run;
- ``sync:last``: the last successful sync, ``{"time", "root", "url", "revision"}``;
- ``sync:error``: the last failed sync, ``[time, message]``, removed by a success;
- ``index:last``: the report (``LibraryIndexReport.to_dict()``) of the last successful run;
- ``index:incomplete``: ``{"time", "pages"}``, written when a run starts writing and
  removed when one finishes (``save_index``): while it is there, a run was stopped
  (Ctrl-C, a crash, an error) part-way and some pages may be missing or stale.

>>> state = library_state(store, "k8s")                                # doctest: +SKIP
>>> len(state.pages), state.revision, state.collections[:2]            # doctest: +SKIP
(873, '3f2a9c1', ['concepts', 'reference'])
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heron.store import Store

PAGE_PREFIX = "page:"
_SYNC, _SYNC_ERROR, _INDEX = "sync:last", "sync:error", "index:last"
_INCOMPLETE = "index:incomplete"


@dataclass(frozen=True)
class LibraryState:
    """One library's remembered state. ``pages``: page id -> state; ``last_sync`` and
    ``last_index`` are empty until the first success; ``sync_error`` is ``(time,
    message)`` of a failed sync not yet followed by a successful one; ``incomplete`` is
    ``{"time", "pages"}`` of a run that started writing and has not finished."""

    name: str
    pages: Mapping[str, str]
    last_sync: Mapping[str, Any]
    last_index: Mapping[str, Any]
    sync_error: tuple[float, str] | None = None
    incomplete: Mapping[str, Any] | None = None

    @property
    def revision(self) -> str | None:
        """The revision of the last sync (a git commit), ``None`` for a local folder."""
        return self.last_sync.get("revision")

    @property
    def synced_at(self) -> float | None:
        return self.last_sync.get("time")

    @property
    def collections(self) -> list[str]:
        """The collections the indexed pages are in (a page ``concepts/pods`` is in
        ``concepts``), sorted; pages outside any folder are in none."""
        parts = (page.partition("/") for page in self.pages)
        return sorted({collection for collection, slash, _ in parts if slash and collection})


def library_state(store: Store, name: str) -> LibraryState:
    """Everything remembered about library ``name`` (an empty state if nothing is)."""
    error = _json(store, name, _SYNC_ERROR)
    return LibraryState(
        name=name,
        pages=page_states(store, name),
        last_sync=last_sync(store, name),
        last_index=last_index(store, name),
        sync_error=(error[0], error[1]) if error else None,
        incomplete=_json(store, name, _INCOMPLETE),
    )


def page_states(store: Store, name: str) -> dict[str, str]:
    """Page id -> state of every indexed page of ``name``."""
    items = store.kv_items(name, PAGE_PREFIX)
    return {key.removeprefix(PAGE_PREFIX): value for key, value in items.items()}


def last_sync(store: Store, name: str) -> dict[str, Any]:
    """The last successful sync (``{}`` before the first): one read, for every search."""
    return _json(store, name, _SYNC) or {}


def last_index(store: Store, name: str) -> dict[str, Any]:
    """The last successful index run's report (``{}`` before the first): it changes each
    time the library is indexed, so a reader may cache what it built from the pages."""
    return _json(store, name, _INDEX) or {}


def save_page(store: Store, name: str, page: str, state: str) -> None:
    store.kv_set(name, PAGE_PREFIX + page, state)


def forget_page(store: Store, name: str, page: str) -> None:
    store.kv_delete(name, PAGE_PREFIX + page)


def save_sync(store: Store, name: str, *, root: str, url: str | None, revision: str | None) -> None:
    """A successful sync: remembered, and the last failure forgotten."""
    sync = {"time": time.time(), "root": root, "url": url, "revision": revision}
    store.kv_set(name, _SYNC, json.dumps(sync))
    store.kv_delete(name, _SYNC_ERROR)


def save_sync_error(store: Store, name: str, message: str) -> None:
    store.kv_set(name, _SYNC_ERROR, json.dumps([time.time(), message]))


def save_index(
    store: Store, name: str, report: Mapping[str, Any], *, complete: bool = True
) -> None:
    """A run that finished: its report kept, and the library complete again; not
    ``complete`` for a run over some pages (``index_library(only=...)``) of a library a
    stopped run left incomplete: the pages it did not redo may still be missing."""
    store.kv_set(name, _INDEX, json.dumps(dict(report)))
    if complete:
        store.kv_delete(name, _INCOMPLETE)


def mark_incomplete(store: Store, name: str, pages: int) -> None:
    """A run of ``pages`` pages is about to write: until ``save_index``, the library is
    incomplete (a stopped run leaves some pages missing or stale)."""
    store.kv_set(name, _INCOMPLETE, json.dumps({"time": time.time(), "pages": pages}))


def incomplete_note(store: Store, name: str) -> str | None:
    """What a search or a status of ``name`` says while a run has not finished (one read
    when none is pending, as ``last_sync``); ``None`` once one has.

    >>> incomplete_note(store, "k8s")                                     # doctest: +SKIP
    "library 'k8s' is incompletely indexed (340 of 873 pages): an index run stopped ..."
    """
    marker = _json(store, name, _INCOMPLETE)
    if marker is None:
        return None
    total = int(marker.get("pages", 0))
    done = min(len(page_states(store, name)), total)  # states of pages since removed: capped
    return (
        f"library {name!r} is incompletely indexed ({done} of {total} pages): an index run "
        f"stopped before it finished, so results may miss pages; finish it with: heron "
        f"index {name}"
    )


def _json(store: Store, name: str, key: str) -> Any:
    raw = store.kv_get(name, key)
    return None if raw is None else json.loads(raw)
