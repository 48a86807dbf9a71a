"""The agent's routing settings (HERON_AGENT_ROUTING_*), the optional built-ins it offers
(fetch_url, python_exec: never to a /v1 request) and the skill uses it records.

Against the loopback OpenAI replay server (tests/llm_servers.py): what the model was
offered is what the request carried."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heron.agent import Agent, Turn
from tests import llm_servers
from tests.llm_servers import ChatServer

SKILL = (
    "---\nname: rollback-deployment\ndescription: Roll a Kubernetes Deployment back to its "
    "previous revision safely.\n---\n1. Run kubectl rollout history.\n2. Run kubectl rollout "
    "undo.\n"
)
ROLLBACK = "How do I roll back a Kubernetes deployment to the previous revision?"


def offered(chat: ChatServer) -> list[str]:
    """The tools the model was offered on the first call of the last turn."""
    first = chat.posted("/v1/chat/completions")[0]
    return [t["function"]["name"] for t in first.get("tools", [])]


def test_the_routing_settings_choose_what_the_model_is_offered(
    make_agent: Callable[..., Agent], chat: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    agent = make_agent(
        agent={
            "routing_mode": "semantic",
            "routing_top_k": 2,
            "routing_always_include": ["no_such_tool", "search_skills"],
        },
    )
    with caplog.at_level(logging.WARNING, "heron.agent"):
        routed = agent.offer.route("Read the file notes-for-alice.txt")
    assert "no_such_tool" in caplog.text  # skipped with a warning, not failing the turn
    assert [r.tool.name for r in routed] == ["search_skills", "read_file"]
    assert routed[0].reason == "always_include"
    agent.ask(Turn("Read the file notes-for-alice.txt"))
    assert offered(chat) == ["search_skills", "read_file"]  # agent.chat honours them too


def test_the_defaults_are_the_recommended_ones_and_the_optional_tools_are_off(
    make_agent: Callable[..., Agent],
) -> None:
    agent = make_agent()
    assert not agent.offer._routers  # built on the first request
    agent.offer.route("List the files in my workspace")
    (router,) = agent.offer._routers.values()
    threshold = router.threshold_for("List the files in my workspace")
    assert (router.mode, router.top_k, threshold) == ("hybrid", 10, 0.25)
    names = {t.name for t in agent.toolbox.registry.tools()}
    assert not names & {"python_exec", "fetch_url"}


def test_python_exec_is_offered_to_heron_s_own_turns_never_to_a_v1_request(
    make_agent: Callable[..., Agent],
) -> None:
    agent = make_agent(tools={"python_exec": True, "fetch_url": True})
    tools = {t.name: t for t in agent.toolbox.registry.tools()}
    assert (tools["python_exec"].safety, tools["fetch_url"].safety) == ("execute", "read")
    assert "network" in tools["fetch_url"].tags
    message = "Run this Python code snippet and print the result"

    def names(**options: Any) -> set[str]:
        return {r.tool.name for r in agent.offer.route(message, **options)}

    assert "python_exec" not in names()  # agent_tool_safety: read
    assert "python_exec" in names(safety="execute")
    assert "python_exec" not in names(safety="execute", local=False)  # what /v1 passes


# -- skill use recorded ------------------------------------------------------------------


@pytest.fixture
def skilled(
    make_agent: Callable[..., Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Agent:
    folder = tmp_path / "skills" / "rollback-deployment"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    monkeypatch.setenv("HERON_SKILLS_DIRS", str(tmp_path / "skills"))
    # read_skill on every request: the model can read a skill whatever the router says
    agent = make_agent(agent={"routing_always_include": ["read_skill"]})
    agent.skills.index()
    return agent


def _replies(monkeypatch: pytest.MonkeyPatch, first: tuple[str, list], then: str) -> None:
    def scripted(body: dict[str, Any], openai: bool) -> tuple[str, list]:
        if body["messages"][-1]["role"] == "tool":
            return then, []
        return first

    monkeypatch.setattr(llm_servers, "_answer", scripted)


def _stats(agent: Agent) -> dict[str, tuple[int, int, int]]:
    return {s.kind: (s.queries, s.reported, s.hits) for s in agent.skills.stats()}


def test_a_skill_the_model_reads_is_recorded_as_used(
    skilled: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = ("call_1", "read_skill", {"name": "rollback-deployment"})
    _replies(monkeypatch, ("", [call]), "Run kubectl rollout undo.")
    answer = skilled.ask(Turn(ROLLBACK))
    assert [(u.name, u.ok) for u in answer.tools] == [("read_skill", True)]
    assert answer.skills == ["rollback-deployment"]  # it was in the prompt as well
    assert _stats(skilled)["concrete"] == (1, 1, 1)


def test_a_skill_in_the_prompt_is_used_when_the_answer_follows_it(
    skilled: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    _replies(monkeypatch, ("Following the rollback deployment skill: run undo.", []), "")
    skilled.ask(Turn(ROLLBACK))
    assert _stats(skilled)["concrete"] == (1, 1, 1)
    _replies(monkeypatch, ("Kubernetes keeps old ReplicaSets around.", []), "")
    skilled.ask(Turn(ROLLBACK))
    assert _stats(skilled)["concrete"] == (2, 2, 1)  # offered, not used: a miss


def test_an_extractive_answer_s_question_is_a_skill_query_too(skilled: Agent) -> None:
    answer = skilled.ask(Turn(ROLLBACK, answer="extractive"))
    assert answer.mode == "extractive" and answer.skills == []  # no prompt to offer them in
    assert _stats(skilled)["concrete"] == (1, 0, 0)  # logged; nothing offered, no outcome
    skilled.ask(Turn("criar skill nova", answer="extractive"))
    assert _stats(skilled)["vague"] == (1, 0, 0)  # Portuguese's generic words too
