"""The agent's observers: ``on_tool_use(actor, use)`` after each tool call it ran and
``on_search(actor, message)`` after each grounding search, told the turn's ``user``; an
observer that fails is logged and the answer stands."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from heron.agent import Turn
from heron.agent.answer import ToolUse
from heron.errors import StoreError
from heron.libraries import index_library
from heron.settings import Settings
from heron.wiring import open_agent
from tests.agent.conftest import MODELS
from tests.llm_servers import ChatServer


def test_observers_are_told_the_user_and_a_failing_one_never_fails_the_answer(
    chat: ChatServer,
    garden: Path,
    workspace: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    models = tmp_path / "models.yml"
    models.write_text(MODELS.format(url=chat.url))
    told: list[tuple[str, str]] = []

    def on_tool_use(actor: str, use: ToolUse, room: str) -> None:
        told.append((actor, use.name))
        raise StoreError("the interventions database is locked")

    settings = Settings(llm={"models_file": models, "retries": 0}, tools={"root": workspace})
    agent = open_agent(
        settings,
        on_tool_use=on_tool_use,
        on_search=lambda actor, q, room: told.append((actor, q)),
    )
    try:
        index_library("garden", agent.store, settings=settings)
        with caplog.at_level(logging.WARNING, logger="heron.agent"):
            answer = agent.ask(Turn("List the files in my workspace", user=" alice "))
        assert [u.name for u in answer.tools] == ["list_files"] and answer.answer
        assert told == [("alice", "List the files in my workspace"), ("alice", "list_files")]
        assert "the interventions database is locked" in caplog.text
        told.clear()
        list(agent.stream(Turn("How often should I water my tomato plants?")))
        assert told == [("", "How often should I water my tomato plants?")]
    finally:
        agent.close()
