from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from heron.libraries import QA, Enricher, add_library, index_library, search
from heron.libraries.enrich import cache_path, read_cache, write_cache
from heron.libraries.parse import Page, parse_page
from heron.settings import Settings
from heron.store import SQLiteStore


class CountingEnricher:
    """A stand-in for the LLM broker: one question per page, calls counted."""

    model_id = "test-model"

    def __init__(self) -> None:
        self.calls = 0

    def questions(self, page: Page) -> list[QA]:
        self.calls += 1
        return [QA(f"What does {page.title} explain?", "It explains things.")]


def test_protocol() -> None:
    assert isinstance(CountingEnricher(), Enricher)


def test_cache_round_trip_and_hash_check(tmp_path: Path) -> None:
    page = parse_page('# Title\n\nBody "quoted" ünïcode\n', "a/b")
    pairs = [QA('How "quoted"?', "Like\nthis.", "anchor")]
    write_cache(tmp_path, page, pairs, "m")
    assert cache_path(tmp_path, "a/b").is_file()
    assert read_cache(tmp_path, page) == pairs
    edited = parse_page("# Title\n\nBody changed\n", "a/b")
    assert read_cache(tmp_path, edited) is None


def test_shipped_cache_is_indexed_with_zero_model_calls(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    page = parse_page((root / "tasks" / "rollback.md").read_text(), "tasks/rollback")
    shipped = [QA("How do I go back to the previous version of my app?", "kubectl rollout undo")]
    write_cache(root, page, shipped, "shipped-model")
    enricher = CountingEnricher()
    add_library("lib", str(root), settings)
    report = index_library("lib", store, settings=settings, enricher=enricher)
    # The shipped page costs nothing; the two pages without a cache are asked once each.
    assert (enricher.calls, report.model_calls, report.questions) == (2, 2, 3)
    assert cache_path(root, "concepts/pods").is_file()
    best = search("go back to the previous version of my app", store, settings=settings)[0]
    assert best.page == "tasks/rollback"
    assert best.via_question == shipped[0].question
    again = index_library("lib", store, settings=settings, enricher=enricher)
    assert (enricher.calls, again.model_calls, again.embedded) == (2, 0, 0)


def test_a_stale_cache_is_ignored_without_an_enricher(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    old = parse_page("# Old text\n", "tasks/rollback")
    write_cache(root, old, [QA("A question about the old text?")], "m")
    add_library("lib", str(root), settings)
    report = index_library("lib", store, settings=settings)
    assert (report.questions, report.model_calls) == (0, 0)
    assert not any("#q" in i for i in store.ids("lib"))
