"""``heron.libraries.state``: what a library remembers, read through ``library_state``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from heron.libraries import LibraryState, add_library, index_library, library_state
from heron.libraries.config import get_library
from heron.libraries.library import library_status
from heron.settings import Settings
from heron.store import SQLiteStore


def test_an_unknown_library_has_an_empty_state(store: SQLiteStore) -> None:
    state = library_state(store, "nothing")
    assert state == LibraryState("nothing", {}, {}, {}, None)
    assert (state.revision, state.synced_at, state.collections) == (None, None, [])


def test_indexing_fills_the_state_and_a_failed_sync_is_remembered_until_a_success(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    add_library("lib", str(root), settings)
    report = index_library("lib", store, settings=settings)
    state = library_state(store, "lib")
    assert set(state.pages) == {"concepts/pods", "concepts/secrets", "tasks/rollback"}
    assert state.collections == ["concepts", "tasks"]
    assert state.last_index["pages"] == report.pages == 3
    assert state.last_sync["root"] == str(root) and state.synced_at is not None
    assert state.sync_error is None

    moved = root.with_name("gone")
    root.rename(moved)
    failed = index_library("lib", store, settings=settings)
    state = library_state(store, "lib")
    assert failed.error is not None and state.sync_error is not None
    assert state.sync_error[1] == failed.error
    assert state.last_index["pages"] == 3  # a failed run leaves the last good report
    status = library_status(get_library("lib", settings), store)
    assert (status.pages, status.last_error) == (3, failed.error)

    moved.rename(root)
    index_library("lib", store, settings=settings)
    assert library_state(store, "lib").sync_error is None
