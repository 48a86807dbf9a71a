"""Pages shipped chunked and embedded beside a library (heron.libraries.shipped): used with
no model run while the page and the model are the ones they were made for, ignored
otherwise; and Heron's own docs ship current ones for every bundled profile."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.embed import MiniLMEmbedder, load_embedder
from heron.libraries import add_library, index_library
from heron.libraries.config import DEFAULT_DOCS_NAME, heron_docs
from heron.libraries.search import scopes
from heron.libraries.ship import ship_vectors
from heron.libraries.shipped import FOLDER, MANIFEST, SHIP, file_name, read_shipped
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.conftest import sqlite_store

STALE = (
    "Heron's docs (or a bundled model) changed since their vectors were made: run "
    f".venv/bin/python {SHIP} and commit docs/{FOLDER}/"
)


@pytest.fixture
def shipped_library(
    settings: Settings, tmp_path: Path, make_library: Callable[..., Path], embedder: MiniLMEmbedder
) -> Path:
    """The test pages with their MiniLM vectors beside them, made in a home of their own."""
    root = make_library()
    other = Settings(
        home=tmp_path / "maker", library={"default_docs": False}, embed={"cache": False}
    )
    add_library("lib", str(root), other)
    ship_vectors("lib", other, embedder)
    add_library("lib", str(root), settings)
    return root


def test_shipped_vectors_are_used_without_a_model_run(
    shipped_library: Path, settings: Settings, store: SQLiteStore, embedder: MiniLMEmbedder
) -> None:
    calls = embedder.calls
    report = index_library("lib", store, settings=settings)
    assert (report.embedded, report.shipped, report.error) == (0, report.records, None)
    assert report.records > 3 and embedder.calls == calls
    # The vectors found are the model's own: the same search ranks the same page first.
    hits = store.search("lib", "return a Deployment to its previous revision", mode="dense")
    assert hits[0].metadata["page"] == "tasks/rollback"
    shipped = read_shipped(shipped_library, embedder.model_id, embedder.dim)
    assert shipped is not None
    _, records = shipped.pages["tasks/rollback"]
    (vector,) = [r.vector for r in records]
    expected = embedder.embed([store.get("lib", records[0].id).text])[0]
    assert vector @ expected > 0.99  # int8 rows: the model's vector, to rounding


def test_a_changed_page_is_embedded_and_the_others_are_not(
    shipped_library: Path, settings: Settings, store: SQLiteStore
) -> None:
    page = shipped_library / "tasks" / "rollback.md"
    page.write_text(page.read_text() + "\nkubectl rollout history lists the revisions.\n")
    report = index_library("lib", store, settings=settings)
    assert report.embedded == 1  # the changed page's one chunk
    assert report.shipped == report.records - 1


def test_shipped_only_writes_nothing_when_a_page_changed(
    shipped_library: Path, settings: Settings, store: SQLiteStore
) -> None:
    """What a new home's first search does with the built-in library: load it when every
    page ships, else leave it for ``heron index`` (no model run behind a search)."""
    page = shipped_library / "tasks" / "rollback.md"
    page.write_text(page.read_text() + "\nkubectl rollout history lists the revisions.\n")
    report = index_library("lib", store, settings=settings, shipped_only=True)
    assert report.error is not None and "1 pages of lib changed" in report.error
    assert "heron index lib" in report.error
    assert "lib" not in {info.name for info in store.namespaces()}


@pytest.mark.parametrize("damage", ["hash", "model", "file"])
def test_a_file_that_does_not_match_is_ignored(
    damage: str, shipped_library: Path, settings: Settings, store: SQLiteStore
) -> None:
    folder = shipped_library / FOLDER
    (path,) = folder.glob("*.npz")
    if damage == "hash":  # the manifest names another file
        manifest = json.loads((folder / MANIFEST).read_text())
        manifest["files"][path.name] = "0" * 64
        (folder / MANIFEST).write_text(json.dumps(manifest))
    elif damage == "model":  # vectors of another model under this model's name
        manifest = json.loads((folder / MANIFEST).read_text())
        other = folder / file_name("another-model")
        path.rename(other)
        manifest["files"] = {other.name: manifest["files"][path.name]}
        (folder / MANIFEST).write_text(json.dumps(manifest))
    else:
        path.write_bytes(b"not a numpy file")
    report = index_library("lib", store, settings=settings)
    assert (report.shipped, report.error) == (0, None)
    assert report.embedded == report.records > 3


def test_a_new_home_searches_heron_s_docs_without_indexing_them(
    home: Path, embedder: MiniLMEmbedder, tmp_path: Path
) -> None:
    """The built-in library is loaded from its shipped vectors at the first search: nothing
    embedded (the model counts no run), and every chunk's vector is current (``STALE``)."""
    settings = Settings()
    calls = embedder.calls
    with sqlite_store(settings.db_path, embedder) as store:
        assert scopes(["What is Heron?"], store, settings) == [[DEFAULT_DOCS_NAME]]
        assert embedder.calls == calls, STALE
        assert store.count(DEFAULT_DOCS_NAME) > 100


@pytest.mark.parametrize("profile", ["multilingual", "e5"])
def test_heron_s_docs_ship_current_vectors_for_every_profile(profile: str, tmp_path: Path) -> None:
    """The default profile indexes Heron's docs without loading e5 at all, and e5 alone
    without an e5 run."""
    settings = Settings(home=tmp_path / "home", embed={"embedder": profile, "cache": False})
    docs = heron_docs()
    assert docs is not None
    with load_embedder(settings) as embedder:
        assert read_shipped(docs, embedder.model_id, embedder.dim) is not None, STALE
        with sqlite_store(settings.db_path, embedder) as store:
            report = index_library(DEFAULT_DOCS_NAME, store, settings=settings)
        assert (report.embedded, report.shipped) == (0, report.records), STALE
        if profile == "multilingual":
            assert embedder._other is None  # type: ignore[attr-defined]  # e5 never loaded
