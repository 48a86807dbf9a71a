from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from heron.errors import InputError, NotFound
from heron.libraries import add_library, index_library, search, search_many, sections
from heron.libraries.search import source_location
from heron.libraries.tool import SEARCH_DOCS, search_docs
from heron.settings import Settings
from heron.store import SQLiteStore


@pytest.fixture
def indexed(settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]) -> Path:
    root = make_library()
    add_library("lib", str(root), settings)
    index_library("lib", store, settings=settings)
    return root


def test_result_carries_citation_section_and_source(
    indexed: Path, store: SQLiteStore, settings: Settings
) -> None:
    best = search("init containers run before the app", store, settings=settings)[0]
    assert (best.library, best.collection, best.page) == ("lib", "concepts", "concepts/pods")
    assert (best.title, best.heading, best.anchor) == ("Pods", "Init containers", "init")
    assert best.citation == "(lib, concepts/pods)"
    assert best.lines == (12, 14)
    assert best.source == f"{indexed}/concepts/pods.md:12-14"
    assert best.snippet.startswith("Init containers run to completion")
    assert set(best.components) == {"fused", "dense", "lexical", "rerank"}
    assert len(best.content_hash) == 64


def test_results_are_pages_not_chunks(
    indexed: Path, store: SQLiteStore, settings: Settings
) -> None:
    results = search("pods", store, settings=settings, top_k=10)
    pages = [r.page for r in results]
    assert len(pages) == len(set(pages)) == 3
    assert results[0].page == "concepts/pods" and results[0].matches == 3


def test_modes_filters_and_libraries(
    indexed: Path,
    store: SQLiteStore,
    settings: Settings,
    make_library: Callable[..., Path],
) -> None:
    for mode in ("full", "hybrid", "dense", "lexical"):
        found = search("kubectl rollout undo", store, settings=settings, mode=mode)
        assert found[0].page == "tasks/rollback", mode
    only = search("pods", store, settings=settings, collection="tasks")
    assert {r.collection for r in only} == {"tasks"}
    add_library(
        "other", str(make_library({"faq.md": "# FAQ\n\nRollout undo is easy."}, "o")), settings
    )
    index_library("other", store, settings=settings)
    both = {r.library for r in search("rollout undo", store, settings=settings)}
    assert both == {"lib", "other"}
    assert {r.library for r in search("undo", store, settings=settings, library="other")} == {
        "other"
    }
    queries = ["password", "kubectl rollout undo", "init containers"]
    batch = search_many(queries, store, settings=settings, top_k=3)
    assert batch == [search(q, store, settings=settings, top_k=3) for q in queries]


def test_errors_name_the_fix(indexed: Path, store: SQLiteStore, settings: Settings) -> None:
    with pytest.raises(NotFound, match="libraries: lib"):
        search("x", store, settings=settings, library="nope")
    with pytest.raises(InputError, match="Choose from: full, hybrid, dense, lexical"):
        search("x", store, settings=settings, mode="fuzzy")
    add_library("fresh", str(indexed), settings)
    with pytest.raises(NotFound, match="run: heron index fresh"):
        search("x", store, settings=settings, library="fresh")


def test_source_locations() -> None:
    github = {"url": "https://github.com/k/website.git", "revision": "abc"}
    assert (
        source_location(github, "a.md", (3, 9))
        == "https://github.com/k/website/blob/abc/a.md#L3-L9"
    )
    other = {"url": "ssh://git.example/docs.git", "revision": "abc"}
    assert source_location(other, "a.md", (3, 9)) == "ssh://git.example/docs.git@abc:a.md:3-9"


def test_search_docs_tool(indexed: Path, store: SQLiteStore, settings: Settings) -> None:
    assert SEARCH_DOCS["input_schema"]["required"] == ["query"]
    out = search_docs({"query": "password", "top_k": 1}, store, settings)
    assert out["results"][0]["citation"] == "(lib, concepts/secrets)"
    with pytest.raises(InputError, match="unknown arguments: colour"):
        search_docs({"query": "x", "colour": "red"}, store, settings)


BACKUPS = {
    "ops/backups.md": (
        "---\ntitle: Database backups\ndescription: How the database is backed up and "
        "restored.\n---\n\n# Database backups\n\nThis page explains how the database is "
        "backed up and how to restore the database.\n\n## Schedule\n\nA full backup runs "
        "every night at 02:00 and is kept for 35 days.\n\n## Restoring the database\n\n"
        "Pick the target time, restore into a new cluster, then switch the service over.\n\n"
        "## Testing restores\n\nEvery Monday a job restores last night's backup and "
        "checks the row counts.\n"
    ),
    "ops/other.md": "# Other\n\nNothing about databases here at all.\n",
}


def test_a_pages_other_sections_are_there_for_the_answer_below_its_lead(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    add_library("ops", str(make_library(BACKUPS, "ops")), settings)
    index_library("ops", store, settings=settings)
    question = "How do I restore the database?"
    best = search(question, store, settings=settings)[0]
    assert (best.page, best.heading) == ("ops/backups", "")  # the lead says it all
    found = sections(best, question, store, count=2)
    headings = [r.heading for r in found]
    assert headings[0] == "Restoring the database" and len(headings) == 2
    assert "" not in headings and best.chunk not in [r.chunk for r in found]
    assert {(r.page, r.score, r.citation) for r in found} == {
        ("ops/backups", best.score, "(ops, ops/backups)")
    }
    assert sections(best, question, store, count=1)[0].heading == "Restoring the database"
