"""A tiny library of real Markdown pages, indexed with the real model, and an agent on it;
the same agent with its model behind the loopback OpenAI replay server (tests/llm_servers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.agent import Agent
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.wiring import open_agent
from tests.llm_servers import KEY, ONE_MODEL, ChatServer, serve

MODELS = ONE_MODEL

PAGES = {
    "garden/watering.md": (
        "# Watering tomatoes\n\n"
        "Water tomato plants deeply twice a week, at the base, early in the morning.\n"
        "In a heat wave water them every day. Never wet the leaves: it spreads blight.\n"
    ),
    "garden/pruning.md": (
        "# Pruning roses\n\n"
        "Prune roses in late winter, just before the buds open. Cut above an outward bud\n"
        "at an angle of 45 degrees and remove dead canes first.\n"
    ),
    "kitchen/bread.md": (
        "# Sourdough bread\n\n"
        "Feed the starter the night before. Mix flour, water and salt, fold four times\n"
        "in two hours, shape, and bake at 240 degrees for 40 minutes.\n"
    ),
}


@pytest.fixture
def garden(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The library ``garden`` (collections garden and kitchen), configured, not indexed;
    Heron's own docs are left out so only this library answers."""
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    root = tmp_path / "garden-docs"
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    add_library("garden", str(root), Settings())
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "notes-for-alice.txt").write_text("hello\n")
    (root / "budget-2031.csv").write_text("a,b\n1,2\n")
    return root


@pytest.fixture
def agent(garden: Path, workspace: Path) -> Iterator[Agent]:
    """An agent over the indexed ``garden`` library and a read-only ``workspace``."""
    opened = open_agent(Settings(tools={"root": workspace}))
    index_library("garden", opened.store, settings=opened.settings)
    yield opened
    opened.close()


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
    with serve() as server:
        yield server


@pytest.fixture
def make_agent(
    chat: ChatServer, garden: Path, workspace: Path, tmp_path: Path
) -> Iterator[Callable[..., Agent]]:
    """``make_agent(**settings)``: an agent on the garden library and the workspace whose
    model is the replay server (a capable model: its answers are generated)."""
    models = tmp_path / "models.yml"
    models.write_text(MODELS.format(url=chat.url))
    opened: list[Agent] = []

    def make(**values: Any) -> Agent:
        # A section the caller names keeps these fields unless it sets them itself.
        llm = {"models_file": models, "retries": 0} | values.pop("llm", {})
        tools = {"root": workspace} | values.pop("tools", {})
        settings = Settings(llm=llm, tools=tools, **values)
        agent = open_agent(settings)
        opened.append(agent)
        index_library("garden", agent.store, settings=settings)
        return agent

    yield make
    for agent in opened:
        agent.close()
