"""A library's life as users see it: add, remove (config, index and checkout), status."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import asdict, dataclass
from typing import Any

from heron.errors import NotFound
from heron.libraries.config import Library, get_library, read_libraries, remove_library
from heron.libraries.state import library_state
from heron.libraries.sync import checkout_dir
from heron.settings import Settings
from heron.store import Store, check_store


@dataclass
class Status:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def library_status(library: Library, store: Store) -> Status:
    name = library.name
    indexed = any(info.name == name for info in store.namespaces())
    ids = store.ids(name) if indexed else []
    questions = sum(1 for i in ids if i.rsplit("#", 1)[-1].startswith("q"))
    state = library_state(store, name)
    error_at, error = state.sync_error or (None, None)
    return Status(
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
    )


def statuses(store: Store, settings: Settings, name: str | None = None) -> list[Status]:
    """The status of one library or all; a damaged store raises ``DatabaseCorrupt`` rather
    than report counts read around the damage."""
    libraries = [get_library(name, settings)] if name else read_libraries(settings)
    check_store(store)
    return [library_status(lib, store) for lib in libraries]


def forget_library(name: str, store: Store, settings: Settings) -> Library:
    """Remove from ``libraries.txt`` first (a running indexer then stops and cleans up),
    then drop the index, its state and any git checkout."""
    library = remove_library(name, settings)
    with contextlib.suppress(NotFound):  # never indexed nor synced
        store.drop(name)
    shutil.rmtree(checkout_dir(library, settings), ignore_errors=True)
    return library
