"""The agent end to end: bad input refused before any model call, the loop against the
loopback OpenAI replay server (tests/llm_servers.py), and the real local model."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.agent import Agent, Citations, Final, Token, ToolUsed, Turn, repeats
from heron.errors import InputError, NotFound
from heron.libraries import index_library
from heron.settings import Settings
from heron.tools import Tool
from heron.wiring import open_agent
from tests import llm_servers
from tests.agent.conftest import MODELS
from tests.llm_servers import ChatServer

# -- bad input: refused before retrieval or any model call ---------------------------------


@pytest.mark.parametrize("message", ["", "   \n\t"])
def test_an_empty_message_is_refused(agent: Agent, message: str) -> None:
    with pytest.raises(InputError, match="empty"):
        agent.ask(Turn(message))


def test_a_message_over_one_megabyte_is_refused(agent: Agent) -> None:
    with pytest.raises(InputError, match=r"1,048,577 bytes.*1 MB"):
        agent.ask(Turn("é" * 524_288 + "x"))
    with pytest.raises(InputError, match="1 MB"):
        agent.stream(Turn("x" * (1 << 20 + 1)))  # the stream refuses before its first event


def test_a_message_over_the_models_context_window_is_refused(agent: Agent) -> None:
    # The bundled model takes 8,192 tokens: 100 kB fits the 1 MB limit but not the model.
    with pytest.raises(InputError, match=r"8,192.*larger context window"):
        agent.ask(Turn("why " * 25_000))


def test_bad_sessions_and_libraries_are_refused(agent: Agent) -> None:
    with pytest.raises(InputError, match="session id"):
        agent.ask(Turn("What is Heron?", session_id="../../etc/passwd"))
    with pytest.raises(NotFound, match="No library 'nope'"):
        agent.ask(Turn("What is Heron?", library="nope"))
    assert agent.sessions.turns("anything") == []


# -- the loop, against the replay server --------------------------------------------------


def test_a_prompt_over_the_context_window_drops_tools_then_passages(
    chat: ChatServer, garden: Path, workspace: Path, tmp_path: Path
) -> None:
    models = tmp_path / "small.yml"
    models.write_text(MODELS.format(url=chat.url) + "    context_window: 330\n")
    settings = Settings(
        llm={"models_file": models}, tools={"root": workspace}, agent={"max_tokens": 100}
    )
    agent = open_agent(settings)
    index_library("garden", agent.store, settings=settings)
    try:
        answer = agent.ask(Turn("How often should I water my tomato plants?"))
    finally:
        agent.close()
    (request,) = chat.posted("/v1/chat/completions")
    assert "tools" not in request and any("tools" in note for note in answer.notes)
    shown = request["messages"][-1]["content"].count("\n[")
    assert 1 <= len(answer.citations) == shown < 3
    assert answer.citations[0].page == "garden/watering"


def test_a_confident_tool_is_forced_on_the_first_call_only(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    answer = make_agent().ask(Turn("List the files in my workspace"))
    first, second = chat.posted("/v1/chat/completions")
    assert first["tool_choice"] == {"type": "function", "function": {"name": "list_files"}}
    assert second.get("tool_choice", "auto") == "auto"
    (use,) = answer.tools
    assert (use.name, use.ok, use.forced) == ("list_files", True, True)
    assert use.result == ["budget-2031.csv", "notes-for-alice.txt", "src/"]
    assert "notes-for-alice.txt" in second["messages"][-1]["content"]  # the model saw it
    assert answer.triage.kind == "tools" and answer.steps == 2
    assert answer.timings["overhead"] >= 0 and answer.usage.prompt_tokens == 22


def test_docs_triage_puts_the_passages_and_citations_in_the_prompt(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    answer = make_agent().ask(Turn("How often should I water my tomato plants?"))
    (request,) = chat.posted("/v1/chat/completions")
    turn = request["messages"][-1]["content"]
    assert turn.startswith("Passages:\n\n[1] (garden, garden/watering) lines ")
    assert "twice a week" in turn
    assert turn.endswith("Question: How often should I water my tomato plants?")
    assert answer.triage.kind == "docs"
    cited = answer.to_dict()["citations"][0]
    assert (cited["library"], cited["collection"], cited["page"]) == (
        "garden",
        "garden",
        "garden/watering",
    )
    assert cited["url_or_path"].endswith("garden/watering.md") and cited["line_range"][0] >= 1


def test_refused_arguments_of_a_forced_read_only_call_are_dropped_once(
    make_agent: Callable[..., Agent], chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer_for = llm_servers._answer

    def invented(body: dict[str, Any], openai: bool) -> tuple[str, list]:
        if body["messages"][-1]["role"] == "tool":
            return answer_for(body, openai)
        return "", [("call_1", "list_files", {"path": "C:\\Users\\me\\work"})]

    monkeypatch.setattr(llm_servers, "_answer", invented)
    answer = make_agent().ask(Turn("List the files in my workspace"))
    refused, rerun = answer.tools
    assert refused.refused and not refused.ok and "not a directory" in refused.error
    assert (rerun.arguments, rerun.ok, rerun.forced) == ({}, True, True)
    assert "notes-for-alice.txt" in rerun.result and answer.notes
    sent = chat.posted("/v1/chat/completions")[-1]["messages"]
    assert json.loads(sent[-2]["tool_calls"][0]["function"]["arguments"]) == {}
    assert sent[-1]["role"] == "tool" and "notes-for-alice.txt" in sent[-1]["content"]


def test_a_call_to_an_unknown_tool_becomes_a_tool_error_the_model_reads(
    make_agent: Callable[..., Agent], chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer_for = llm_servers._answer

    def rogue(body: dict[str, Any], openai: bool) -> tuple[str, list]:
        if body["messages"][-1]["role"] == "tool":
            return answer_for(body, openai)
        return "", [("call_x", "delete_everything", {"path": "/"})]

    monkeypatch.setattr(llm_servers, "_answer", rogue)
    answer = make_agent().ask(Turn("Tell me a joke"))
    (use,) = answer.tools
    assert use.name == "delete_everything" and not use.ok
    assert "delete_everything" in use.error
    last = chat.posted("/v1/chat/completions")[-1]["messages"][-1]
    assert last["role"] == "tool" and "error" in last["content"]
    assert answer.answer.startswith("echo: ")


def test_a_tool_added_later_is_routed_and_its_invalid_json_is_a_tool_error(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    agent = make_agent()
    agent.ask(Turn("How often should I water my tomato plants?"))  # builds the first router
    weather = Tool("weather_forecast", "Give the weather forecast for a city.")
    agent.toolbox.registry.add(weather, lambda a: {"temperature": math.nan})
    answer = agent.ask(Turn("What is the weather forecast for Paris?"))
    (use,) = answer.tools
    assert (use.name, use.forced, use.ok) == ("weather_forecast", True, False)
    assert "not valid JSON" in use.error
    assert "not valid JSON" in chat.posted("/v1/chat/completions")[-1]["messages"][-1]["content"]


def test_a_hanging_tool_times_out_and_the_answer_still_comes(
    make_agent: Callable[..., Agent],
) -> None:
    agent = make_agent(agent={"tool_timeout": 0.5})
    release = threading.Event()
    agent.toolbox.registry.add(
        Tool("weather_forecast", "Give the weather forecast for a city."),
        lambda a: release.wait(30),
    )
    answer = agent.ask(Turn("What is the weather forecast for Paris?"))
    release.set()
    (use,) = answer.tools
    assert not use.ok and "did not answer within 0.5 s" in use.error
    assert answer.answer.startswith("echo: ") and answer.timings["tools"] < 2


def test_the_stream_gives_tokens_then_citations_then_the_answer(
    make_agent: Callable[..., Agent],
) -> None:
    events = list(make_agent().stream(Turn("How often should I water my tomato plants?")))
    kinds = [type(e) for e in events]
    assert kinds[-2:] == [Citations, Final] and set(kinds[:-2]) == {Token}
    final = events[-1].answer
    assert "".join(e.text for e in events[:-2]) == final.answer
    assert events[-2].citations == final.citations and final.citations


def test_a_session_carries_the_conversation_and_is_stored(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    agent = make_agent()
    first = agent.ask(Turn("How often should I water my tomato plants?"))
    second = agent.ask(Turn("And in a heat wave?", session_id=first.session_id))
    assert second.session_id == first.session_id
    sent = chat.posted("/v1/chat/completions")[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "How often should I water my tomato plants?"
    stored = agent.history(first.session_id)
    assert [t["message"] for t in stored] == [
        "How often should I water my tomato plants?",
        "And in a heat wave?",
    ]
    assert stored[1]["answer"] == json.loads(json.dumps(second.to_dict()))


# -- the real local model ------------------------------------------------------------------


@pytest.fixture
def local_agent(garden: Path, workspace: Path) -> Iterator[Agent]:
    agent = open_agent(Settings(tools={"root": workspace}, agent={"max_tokens": 96}))
    index_library("garden", agent.store, settings=agent.settings)
    yield agent
    agent.close()


def test_local_model_writes_a_grounded_answer_that_does_not_loop(local_agent: Agent) -> None:
    # The bundled model answers extractively by default; asked to write, it gets repeat
    # penalties and the guard, so what comes back never loops.
    answer = local_agent.ask(
        Turn("How often should I water my tomato plants?", answer="generative")
    )
    assert answer.model == "local" and answer.answer.strip()
    assert (answer.citations[0].library, answer.citations[0].page) == ("garden", "garden/watering")
    assert answer.usage.completion_tokens > 0 and answer.timings["model"] > 0
    assert repeats(answer.answer) is None
    if answer.fallback:  # the guard stopped it: the quotes replaced the loop
        assert answer.mode == "extractive" and "[1]" in answer.answer
    else:
        assert answer.mode == "generative" and answer.finish_reason in ("stop", "length")


def test_local_model_lists_the_real_workspace(local_agent: Agent) -> None:
    events = list(local_agent.stream(Turn("List the files in my workspace")))
    used = [e.tool for e in events if isinstance(e, ToolUsed)]
    # SmolLM2 may invent a path; then the call runs again with the tool's defaults.
    assert {u.name for u in used} == {"list_files"} and all(u.forced for u in used)
    assert used[-1].ok and "notes-for-alice.txt" in used[-1].result
    # Extractive: the model chose the call; the listing itself is the answer.
    final = events[-1]
    assert isinstance(final, Final) and final.answer.steps == 1
    assert final.answer.mode == "extractive"
    assert "list_files returned: budget-2031.csv, notes-for-alice.txt" in final.answer.answer


def test_with_a_workspace_the_agent_can_hand_a_task_to_a_job(agent: Agent) -> None:
    from heron.jobs import open_jobs

    tool = agent.toolbox.registry.get("delegate_job")
    assert tool.safety == "execute"  # its job runs programs: see the test below
    queued = agent.toolbox.registry.call("delegate_job", {"prompt": "is main broken?"})
    jobs = open_jobs(agent.settings)
    try:
        job = jobs.get(queued["id"])
        assert (job.state, job.prompt, job.risk_level) == ("queued", "is main broken?", "read_only")
    finally:
        jobs.store.close()


#: Every tool an agent with a workspace has, and the harm a call can do: a new tool fails
#: this test until its level is chosen here.
SAFETY = {
    "list_files": "read",
    "read_file": "read",
    "search_docs": "read",
    "search_skills": "read",
    "read_skill": "read",
    "write_file": "write",
    "run_command": "execute",
    "delegate_job": "execute",  # writes a job, which runs git and the test command
}


def test_every_tool_reports_its_real_safety(agent: Agent) -> None:
    assert {t.name: t.safety for t in agent.toolbox.registry.tools()} == SAFETY


def test_delegate_job_is_offered_only_where_running_programs_is_allowed(agent: Agent) -> None:
    message = "Hand this to a background job: check whether main builds"

    def offered(**options: Any) -> set[str]:
        return {r.tool.name for r in agent.offer.route(message, **options)}

    assert "delegate_job" not in offered()  # HERON_AGENT_TOOL_SAFETY's default, read
    assert offered() <= {name for name, level in SAFETY.items() if level == "read"}
    assert "delegate_job" not in offered(safety="write")
    assert "delegate_job" in offered(safety="execute")


def test_a_tool_that_served_a_request_learns_it_as_an_example(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    from heron.wiring import open_tools

    agent = make_agent()
    agent.ask(Turn("List the files in my workspace"))
    box = open_tools(agent.settings, connect=False)
    try:
        assert box.registry.get("list_files").examples == ("List the files in my workspace",)
        assert box.registry.get("read_file").examples == ()
    finally:
        box.close()
