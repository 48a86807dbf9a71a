from __future__ import annotations

import logging

import pytest

from heron.core.errors import ToolInputError, UnknownTool
from heron.store import SQLiteStore
from heron.tools import Tool, ToolRouter
from heron.tools.router import index_hash
from tests.conftest import sqlite_store

TOOLS = [
    Tool("weather.forecast", "Get the weather forecast for a city.",
         {"properties": {"city": {"description": "city name"}}}),
    Tool("mail.send", "Send an email message to a recipient."),
    Tool("calendar.create_event", "Create a calendar event or meeting."),
    Tool("files.search", "Search files on disk by name."),
    Tool("stocks.quote", "Current stock price for a ticker symbol."),
    Tool("translate", "Translate text between languages."),
    Tool("search_docs", "Search the documentation libraries."),
]  # fmt: skip


def names(route) -> list[str]:
    return [t.tool.name for t in route.tools]


def test_hybrid_routes_the_right_tool_first_and_explains(store: SQLiteStore) -> None:
    router = ToolRouter(TOOLS, store, top_k=3, profile="openai")
    route = router.route("what will the weather be in Lisbon tomorrow?")
    assert names(route)[0] == "weather.forecast"
    assert route.mode == "hybrid" and len(route.tools) <= 3
    first = route.tools[0]
    assert first.name == "weather_forecast" and first.kept and first.reason == "rank 1"
    assert first.dense_score > 0.25 and first.lexical_score > 0
    assert all(not t.kept for t in route.dropped) and route.dropped
    payload = route.payload()
    assert payload[0]["function"]["name"] == "weather_forecast"
    assert router.decode("weather_forecast").name == "weather.forecast"
    with pytest.raises(UnknownTool):
        router.decode("weather.forecast")


def test_semantic_threshold_drops_weak_matches(store: SQLiteStore) -> None:
    router = ToolRouter(TOOLS, store, mode="semantic", threshold=0.99)
    route = router.route("send an email to Bob")
    assert route.tools == []
    assert all("threshold 0.99" in t.reason for t in route.dropped)


def test_always_include_is_kept_and_counts_towards_top_k(store: SQLiteStore) -> None:
    router = ToolRouter(TOOLS, store, top_k=2, always_include=["search_docs"])
    route = router.route("send an email")
    assert names(route) == ["search_docs", "mail.send"]
    assert route.tools[0].reason == "always_include"
    with pytest.raises(ToolInputError, match="unknown tools: nope"):
        ToolRouter(TOOLS, store, always_include=["nope"])


def test_pattern_over_the_limit_degrades_to_hybrid(store: SQLiteStore, caplog) -> None:
    many = [Tool(f"t{i}", f"tool number {i}") for i in range(140)]
    router = ToolRouter(many, store, profile="openai", mode="pattern")
    with caplog.at_level(logging.WARNING, "heron.tools"):
        route = router.route("tool number 7")
    assert route.mode == "hybrid" and len(route.tools) == 128
    assert "exceed the openai limit of 128" in caplog.text
    small = ToolRouter(TOOLS, store, profile="openai", mode="pattern", namespace="small")
    assert len(small.route("anything").tools) == len(TOOLS)
    assert len(ToolRouter(many, store, profile="anthropic", mode="pattern").route("x").tools) == 140


def test_top_k_never_exceeds_the_provider_limit(store: SQLiteStore) -> None:
    many = [Tool(f"t{i}", f"tool number {i}") for i in range(140)]
    route = ToolRouter(many, store, profile="openai", threshold=-1).route("tool", top_k=500)
    assert len(route.tools) == 128 and "lowered" in route.warnings[0]


def test_unchanged_index_embeds_nothing_and_a_change_only_itself(tmp_path, embedder) -> None:
    store = sqlite_store(tmp_path / "h.db", embedder)
    first = ToolRouter(TOOLS, store).sync_report
    assert (first.embedded, first.unchanged_index) == (len(TOOLS), False)
    store.close()
    store = sqlite_store(tmp_path / "h.db", embedder)
    calls = embedder.calls
    again = ToolRouter(TOOLS, store)
    assert again.sync_report.unchanged_index and embedder.calls == calls
    changed = [*TOOLS[:-1], Tool("search_docs", "Search the manuals.")]
    report = ToolRouter(changed, store).sync_report
    assert (report.embedded, report.unchanged_index) == (1, False)
    fewer = ToolRouter(TOOLS[:3], store).sync_report
    assert (fewer.embedded, fewer.removed) == (0, 4)
    assert store.count("tools") == 3
    store.close()


def test_index_hash_covers_model_names_and_texts() -> None:
    base = index_hash("m", ["a"], ["x"])
    assert base != index_hash("m2", ["a"], ["x"]) != index_hash("m", ["a"], ["y"])
    assert base != index_hash("m", ["b"], ["x"])


def test_bad_mode_names_the_choices(store: SQLiteStore) -> None:
    with pytest.raises(ToolInputError, match="Choose from: pattern, semantic, hybrid"):
        ToolRouter(TOOLS, store, mode="fuzzy")  # type: ignore[arg-type]


def test_examples_pull_a_tool_towards_its_users_words(store: SQLiteStore) -> None:
    query = "is it going to be sunny at the beach this weekend?"
    plain = ToolRouter(TOOLS, store, top_k=3)
    score = {t.tool.name: t.score for t in plain.route(query).tools}.get("files.search")
    # Teach files.search a request like the query: its score must rise.
    taught = [
        Tool(t.name, t.description, examples=("will it be sunny at the beach on saturday",))
        if t.name == "files.search"
        else t
        for t in TOOLS
    ]
    router = ToolRouter(taught, store, top_k=3)
    assert router.sync_report.embedded == 1  # only the example: the tool text is unchanged
    route = {t.tool.name: t.score for t in router.route(query).tools}
    assert "files.search" in route and (score is None or route["files.search"] > score)


def test_changing_an_example_re_embeds_only_it(tmp_path, embedder) -> None:
    store = sqlite_store(tmp_path / "h.db", embedder)
    tools = [*TOOLS[:-1], Tool("search_docs", "Search the manuals.", examples=("a", "b"))]
    assert ToolRouter(tools, store).sync_report.embedded == len(TOOLS) + 2
    tools[-1] = Tool("search_docs", "Search the manuals.", examples=("a", "c"))
    assert ToolRouter(tools, store).sync_report.embedded == 1
    tools[-1] = Tool("search_docs", "Search the manuals.")
    report = ToolRouter(tools, store).sync_report
    assert (report.embedded, report.removed) == (0, 2)
    assert store.count("tools") == len(TOOLS)
    store.close()
