"""Many libraries at once: one scale for every library's passages, a page indexed twice
listed once, and one rule for Heron's own docs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from heron.errors import NotFound
from heron.libraries import add_library, index_library, scope_of, search
from heron.libraries.config import Library
from heron.libraries.search import pool
from heron.settings import Settings
from heron.store import Hit, SQLiteStore
from heron.store.fusion import fuse

# A big library about something else entirely. Scored against its own candidates, its
# best passage still stands out (a z-score says "best of these", not "relevant"), and a
# ten-chunk library's best cannot stand out as far: on separate scales the cookbook wins.
BIG = {
    f"recipes/dish{i}.md": (
        f"# Dish {i}\n\n"
        f"Bake dish {i} at {150 + i} degrees for {20 + i % 7} minutes, then let it rest. "
        f"Serve it with {['rice', 'bread', 'salad', 'potatoes'][i % 4]} and a green sauce.\n\n"
        f"## Storing dish {i}\n\nKeep it covered in the fridge for up to {1 + i % 4} days.\n"
    )
    for i in range(60)
}
NOTES = {
    "it/vpn.md": (
        "# Remote access\n\nThe credentials for the remote-access tunnel change every "
        "90 days; you get an email a week before. Request new ones on the IT portal.\n"
    ),
    "hr/leave.md": "# Leave\n\nYou have 25 days of paid leave a year, booked in the HR tool.\n",
}


@pytest.fixture
def two(settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]) -> SQLiteStore:
    add_library("big", str(make_library(BIG, "big")), settings)
    add_library("notes", str(make_library(NOTES, "notes")), settings)
    for name in ("big", "notes"):
        index_library(name, store, settings=settings)
    return store


def test_a_small_librarys_answer_is_not_outranked_by_a_big_librarys_neighbours(
    two: SQLiteStore, settings: Settings
) -> None:
    for question in ("How often does the VPN password rotate?", "how many days of leave"):
        for mode in ("full", "hybrid"):
            alone = search(question, two, settings=settings, library="notes", mode=mode)
            every = search(question, two, settings=settings, mode=mode, top_k=4)
            assert (every[0].library, every[0].page) == ("notes", alone[0].page), mode
            # On one scale the notes' own order holds among the cookbook's pages.
            ours = [r.page for r in every if r.library == "notes"]
            assert ours == [r.page for r in alone][: len(ours)], mode


def test_every_mode_ranks_across_libraries(two: SQLiteStore, settings: Settings) -> None:
    for mode in ("full", "hybrid", "dense", "lexical"):
        found = search(
            "remote access tunnel credentials", two, settings=settings, mode=mode, top_k=3
        )
        assert found[0].page == "it/vpn", mode


def test_several_chosen_libraries_are_searched_together_and_each_checked(
    two: SQLiteStore, settings: Settings, make_library: Callable[..., Path]
) -> None:
    add_library("third", str(make_library({"x.md": "# Leave\n\nDays of leave.\n"}, "x")), settings)
    index_library("third", two, settings=settings)
    question = "how many days of leave"
    both = search(question, two, settings=settings, library=["notes", "big", "notes"], top_k=20)
    assert {r.library for r in both} == {"notes", "big"}  # third left out, though all leave
    assert both[0].library == "notes"
    assert [r.library for r in search(question, two, settings=settings, library=["third"])] == [
        "third"
    ]
    with pytest.raises(NotFound, match="No library 'nope'"):
        search(question, two, settings=settings, library=["notes", "nope"])


def test_the_pool_takes_the_stores_feedback_from_its_top_candidate() -> None:
    # b and c read alike; c is a little nearer the query, b nearer the top candidate a.
    # Rocchio feedback from a (the store's second pass) puts b first of the two.
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    vectors = {"a": [0.9, 0.436, 0.0], "b": [0.7, 0.714, 0.0], "c": [0.72, 0.0, 0.694]}
    texts = {"a": "restore the database backup", "b": "database notes", "c": "database notes"}
    hits = [
        Hit(key, 0.0, texts[key], {}, 1, float(np.dot(query, v)), vector=np.array(v, "f4"))
        for key, v in vectors.items()
    ]
    assert [h.id for h in pool("restore database", hits, query)] == ["a", "b", "c"]
    # One fusion alone, without the feedback, keeps c first of the two.
    dense = np.array([h.dense_score for h in hits])
    lexical = np.array([2.0, 1.0, 1.0])  # a's two query terms, b's and c's one
    keys = np.arange(3)
    once = fuse(keys[np.argsort(-dense)], np.sort(dense)[::-1], keys, lexical, top_k=3, alpha=0.8)
    assert [hits[f.key].id for f in once] == ["a", "c", "b"]
    # No query vector: a lexical search, BM25 alone orders.
    assert [h.id for h in pool("restore database", hits)] == ["a", "b", "c"]


def test_a_page_indexed_twice_is_listed_once_with_both_sources(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    add_library("notes", str(make_library(NOTES, "notes")), settings)
    add_library("copy", str(make_library(NOTES, "copy")), settings)
    for name in ("notes", "copy"):
        index_library(name, store, settings=settings)
    found = search("How often does the VPN password rotate?", store, settings=settings)
    pages = [r.page for r in found]
    assert pages.count("it/vpn") == 1
    best = found[0]
    other = "copy" if best.library == "notes" else "notes"
    assert [c["citation"] for c in best.also_in] == [f"({other}, it/vpn)"]
    assert best.also_in[0]["source"].endswith("it/vpn.md:" + best.source.rsplit(":", 1)[1])


def test_heron_docs_join_only_when_named_or_alone() -> None:
    heron = Library("heron", "/docs", builtin=True)
    notes, k8s = Library("notes", "/n"), Library("kubernetes", "/k")
    assert scope_of("How do I restore the database?", [notes, k8s, heron]) == [
        "notes",
        "kubernetes",
    ]
    assert scope_of("How does Heron restore a backup?", [notes, heron]) == ["heron"]
    assert scope_of("how does HERON pick tools", [notes, heron]) == ["heron"]
    assert scope_of("herons are birds", [notes, heron]) == ["notes"]
    assert scope_of("How do I restore the database?", [heron]) == ["heron"]
    assert scope_of("anything", [notes]) == ["notes"]
