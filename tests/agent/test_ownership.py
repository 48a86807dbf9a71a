"""The agent closes what it opened and nothing it was handed; its tool calls run on an
executor it owns, so no tool thread outlives ``close()`` (the ownership rule,
``heron.store.base``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from heron.agent import Agent, Turn
from heron.settings import Settings
from heron.store import Record, SQLiteStore
from heron.tools import Tool
from heron.wiring import open_agent


def tool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("heron-tool")]


def test_closing_the_agent_leaves_the_store_it_was_given_open(
    home: Path, store: SQLiteStore
) -> None:
    agent = open_agent(Settings(agent={"tool_workers": 3}), store=store)
    assert agent.skills.store is store and agent.toolbox.store is store  # no second store
    assert agent.executor.workers == 3  # HERON_AGENT_TOOL_WORKERS bounds the tool threads
    agent.close()
    # The store and its embedder still work: the agent closed only what it opened.
    store.upsert("notes", [Record("a", "water the tomatoes at the base")])
    assert store.search("notes", "tomato watering", top_k=1)[0].id == "a"


def test_a_tool_past_its_timeout_leaves_no_thread_after_close(
    make_agent: Callable[..., Agent],
) -> None:
    before = tool_threads()
    agent = make_agent(agent={"tool_timeout": 0.3})
    release = threading.Event()
    agent.toolbox.registry.add(
        Tool("weather_forecast", "Give the weather forecast for a city."),
        lambda a: release.wait(1.5),  # outlives its deadline, then ends on its own
    )
    answer = agent.ask(Turn("What is the weather forecast for Paris?"))
    (use,) = answer.tools
    assert not use.ok and "did not answer within 0.3 s" in use.error
    assert len(tool_threads()) > len(before)  # still running when the answer came
    agent.close()  # joins it
    assert tool_threads() == before
