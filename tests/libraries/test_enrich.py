"""Questions at index time: the Q&A caches, and the model asked through the broker."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from heron.libraries import QA, Enricher, add_library, index_library, search
from heron.libraries.config import get_library
from heron.libraries.enrich import (
    CacheRead,
    ModelEnricher,
    cache_path,
    parse_pairs,
    read_caches,
    write_cache,
)
from heron.libraries.parse import Page, parse_page
from heron.libraries.sync import qa_fallback_dir
from heron.llm import Broker, load_broker
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.wiring import library_enricher
from tests.llm_servers import KEY, ONE_MODEL, ChatServer, serve


class CountingEnricher:
    """A stand-in for the LLM broker: one question per page, calls counted."""

    model_id = "test-model"

    def __init__(self) -> None:
        self.calls = 0

    def questions(self, page: Page) -> list[QA]:
        self.calls += 1
        return [QA(f"What does {page.title} explain?", "It explains things.")]


def reply(*questions: str, section: str = "") -> str:
    """A model's answer in the JSON the enricher asks for."""
    qa = [{"question": q, "answer": f"About {q}", "section": section} for q in questions]
    return json.dumps({"qa": qa})


@pytest.fixture
def chat(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """The OpenAI wire format on loopback as the default model of models.yml."""
    with serve() as server:
        home.mkdir(parents=True, exist_ok=True)
        (home / "models.yml").write_text(ONE_MODEL.format(url=server.url))
        monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
        monkeypatch.setenv("HERON_LLM_RETRIES", "0")
        yield server


@pytest.fixture
def broker(chat: ChatServer, settings: Settings) -> Iterator[Broker]:
    with closing(load_broker(Settings())) as opened:  # read after chat's environment
        yield opened


def test_protocol() -> None:
    assert isinstance(CountingEnricher(), Enricher)
    assert isinstance(ModelEnricher(lambda s, u, j: "", "m"), Enricher)


def test_cache_round_trip_and_hash_check(tmp_path: Path) -> None:
    page = parse_page('# Title\n\nBody "quoted" ünïcode\n', "a/b")
    pairs = [QA('How "quoted"?', "Like\nthis.", "anchor")]
    write_cache(tmp_path, page, pairs, "m")
    assert cache_path(tmp_path, "a/b").is_file()
    assert read_caches(tmp_path, page).pairs == pairs
    edited = parse_page("# Title\n\nBody changed\n", "a/b")
    assert read_caches(tmp_path, edited) == CacheRead(None, stale=True)
    assert read_caches(tmp_path, parse_page("x", "other")) == CacheRead(None, stale=False)


def test_answers_are_parsed_from_json_prose_or_lines() -> None:
    page = parse_page("# Volumes\n\n## Expanding claims\n\nEdit the size.\n", "volumes")
    fenced = "Here you go:\n```json\n" + reply("How do I grow a claim?", section="Expanding claims")
    pairs = parse_pairs(fenced + "\n```", page)
    assert pairs == [
        QA("How do I grow a claim?", "About How do I grow a claim?", "expanding-claims")
    ]
    lines = "1. Q: How do I grow a claim?\n2. Question: Can a claim shrink?\nQ: ok\n"
    assert [p.question for p in parse_pairs(lines, page)] == [
        "How do I grow a claim?",
        "Can a claim shrink?",
    ]  # "ok" is too short to be a question
    twice = reply("How do I grow a claim?", "how do I grow a claim?", section="Nowhere")
    assert parse_pairs(twice, page) == [
        QA("How do I grow a claim?", "About How do I grow a claim?", "")
    ]
    assert parse_pairs("I cannot help with that.", page) == []
    cut = '{"qa": [{"question": "Can a \\"claim\\" shrink?", "answer": "No."}, {"question": "Why'
    assert parse_pairs(cut, page) == [QA('Can a "claim" shrink?', "No.")]  # cut at max_tokens
    raw = '{"qa": [{"question": "How does an autoscaler work?", "answer": "A loop\n\n{ " } ]}'
    assert parse_pairs(raw, page) == [QA("How does an autoscaler work?", "A loop {")]


def test_the_page_is_cut_to_the_model(settings: Settings, chat: ChatServer) -> None:
    with closing(load_broker(Settings())) as remote:
        assert library_enricher(Settings(), remote).max_chars == 12_000
    (settings.home / "models.yml").unlink()  # the bundled local model: not loaded here
    with closing(load_broker(Settings())) as local:
        assert library_enricher(Settings(), local).max_chars == 3_000
        small = Settings(library={"enrich_max_chars": 2000})
        assert library_enricher(small, local).max_chars == 2000


def test_shipped_cache_is_indexed_with_zero_model_calls(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    page = parse_page((root / "tasks" / "rollback.md").read_text(), "tasks/rollback")
    shipped = [QA("How do I go back to the previous version of my app?", "kubectl rollout undo")]
    write_cache(root, page, shipped, "shipped-model")
    enricher = CountingEnricher()
    add_library("lib", str(root), settings)
    report = index_library("lib", store, settings=settings, enricher=enricher, enrich=True)
    # The shipped page costs nothing; the two pages without a cache are asked once each.
    assert (enricher.calls, report.model_calls, report.questions) == (2, 2, 3)
    assert cache_path(root, "concepts/pods").is_file()
    best = search("go back to the previous version of my app", store, settings=settings)[0]
    assert best.page == "tasks/rollback"
    assert best.via_question == shipped[0].question
    again = index_library("lib", store, settings=settings, enricher=enricher, enrich=True)
    assert (enricher.calls, again.model_calls, again.embedded) == (2, 0, 0)


def test_a_stale_cache_is_counted_and_left_out_without_enrichment(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    old = parse_page("# Old text\n", "tasks/rollback")
    write_cache(root, old, [QA("A question about the old text?")], "m")
    add_library("lib", str(root), settings)
    enricher = CountingEnricher()  # given, but enrichment is off: never called
    report = index_library("lib", store, settings=settings, enricher=enricher)
    assert (report.questions, report.model_calls, report.stale_caches) == (0, 0, 1)
    assert enricher.calls == 0
    assert not any("#q" in i for i in store.ids("lib"))


def test_the_libraries_txt_option_turns_enrichment_on(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    add_library("lib", str(make_library()), settings, enrich=True)
    assert "enrich=yes" in (settings.home / "libraries.txt").read_text()
    enricher = CountingEnricher()
    assert index_library("lib", store, settings=settings, enricher=enricher).model_calls == 3
    off = index_library("lib", store, settings=settings, enricher=enricher, enrich=False)
    assert (off.model_calls, off.questions, off.unchanged) == (0, 3, 3)  # caches still read


def test_the_docs_repo_layout_cache_beside_the_page_is_read(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library({"collections/guide/intro.md": "# Intro\n\nHero OS runs agents.\n"})
    page = parse_page((root / "collections/guide/intro.md").read_text(), "collections/guide/intro")
    beside = root / "collections/guide/.ai/intro.toml"  # as docs_hero ships it
    beside.parent.mkdir()
    beside.write_text(
        f'content_hash = "{page.content_hash}"\n\n[[qa]]\nquestion = "What does Hero OS run?"\n'
    )
    add_library("lib", str(root), settings)
    report = index_library(
        "lib", store, settings=settings, enricher=CountingEnricher(), enrich=True
    )
    assert (report.model_calls, report.questions) == (0, 1)


def test_the_broker_writes_questions_once_and_regenerates_stale_ones(
    settings: Settings,
    store: SQLiteStore,
    make_library: Callable[..., Path],
    chat: ChatServer,
    broker: Broker,
) -> None:
    root = make_library()
    stale = parse_page("# Roll back, an older text\n", "tasks/rollback")
    write_cache(root, stale, [QA("A question about the old text?")], "old-model")
    add_library("lib", str(root), settings)
    chat.fail("gpt-test", 500)  # the first page's call fails: reported, page still indexed
    chat.replies += [
        reply("Which secret data is stored unencrypted by default?", section="Rotating a Secret"),
        reply("How do I return my app to the version before?", "What undoes a rollout?"),
    ]
    enricher = library_enricher(settings, broker)
    report = index_library("lib", store, settings=settings, enricher=enricher, enrich=True)
    assert report.model_calls == 3 and report.questions == 3
    assert [e["page"] for e in report.enrich_errors] == ["concepts/pods"]
    assert "concepts/pods#0" in store.ids("lib")  # indexed without questions
    sent = chat.posted("/v1/chat/completions")
    assert sent[1]["response_format"]["type"] == "json_schema"
    assert "Secrets are stored unencrypted in etcd" in sent[1]["messages"][1]["content"]
    rollback = parse_page((root / "tasks/rollback.md").read_text(), "tasks/rollback")
    regenerated = read_caches(root, rollback).pairs
    assert regenerated is not None and regenerated[0].question.startswith("How do I return")
    assert "gpt-test" in cache_path(root, "tasks/rollback").read_text()
    best = search("return my app to the version before", store, settings=settings)[0]
    assert best.page == "tasks/rollback" and best.via_question
    secrets = store.get("lib", "concepts/secrets#q0").metadata
    assert secrets["anchor"] == "rotating-a-secret"
    chat.replies.append(reply("What does a Pod run?"))
    again = index_library("lib", store, settings=settings, enricher=enricher, enrich=True)
    assert (again.model_calls, again.enrich_errors, again.questions) == (1, [], 4)  # pods only
    third = index_library("lib", store, settings=settings, enricher=enricher, enrich=True)
    assert (third.model_calls, third.embedded, third.unchanged) == (0, 0, 3)
    assert len(chat.posted("/v1/chat/completions")) == 4


def test_a_library_that_cannot_be_written_keeps_its_caches_in_the_data_directory(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    (root / ".ai").write_text("a file where the cache folder would be: unwritable, even as root")
    add_library("lib", str(root), settings)
    enricher = CountingEnricher()
    assert (
        index_library("lib", store, settings=settings, enricher=enricher, enrich=True).questions
        == 3
    )
    fallback = qa_fallback_dir(get_library("lib", settings), settings)
    assert cache_path(fallback, "concepts/pods").is_file()
    again = index_library("lib", store, settings=settings, enricher=enricher, enrich=True)
    assert (again.model_calls, again.questions) == (0, 3)
