"""The agent's hooks for the OpenAI endpoint, against the loopback OpenAI replay server:
instructions, the client's history, sampling on every call, the client's own tools (their
calls come back unrun, and the turn continues from their results), and tool choice."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from heron.agent import Agent, ClientToolCalls, Final, Turn
from heron.agent.prompt import RULES
from heron.core.chat import Message, Sampling, ToolCall
from heron.errors import InputError
from heron.llm.errors import ProviderError
from heron.tools import Tool
from tests import llm_servers
from tests.llm_servers import ChatServer

WEATHER = Tool(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WATERING = "How often should I water my tomato plants?"
Make = Callable[..., Agent]


def posted(chat: ChatServer) -> list[dict]:
    return chat.posted("/v1/chat/completions")


def test_instructions_join_the_system_prompt_after_herons_rules(
    make_agent: Make, chat: ChatServer
) -> None:
    make_agent().ask(Turn(WATERING, instructions="Answer in French, in one sentence."))
    (request,) = posted(chat)
    system = request["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(RULES)
    assert system["content"].index("Answer in French") > len(RULES)
    assert sum(m["role"] == "system" for m in request["messages"]) == 1


def test_the_clients_history_replaces_the_sessions(make_agent: Make, chat: ChatServer) -> None:
    agent = make_agent()
    first = agent.ask(Turn(WATERING))
    history = [Message("user", "Who are you?"), Message("assistant", "A gardener.")]
    agent.ask(Turn("And the roses?", session_id=first.session_id, history=history))
    sent = posted(chat)[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert (sent[1]["content"], sent[2]["content"]) == ("Who are you?", "A gardener.")
    assert sent[-1]["content"].endswith("And the roses?")


def test_sampling_reaches_every_call_and_penalties_only_the_writing_ones(
    make_agent: Make, chat: ChatServer
) -> None:
    sampling = Sampling(max_tokens=33, temperature=0.2, seed=7)
    answer = make_agent().ask(Turn("List the files in my workspace", sampling=sampling))
    forced, writing = posted(chat)  # the forced list_files call, then the answer
    for request in (forced, writing):
        assert (request["max_tokens"], request["temperature"], request["seed"]) == (33, 0.2, 7)
    # A forced call writes JSON: no penalties there. The answer gets Heron's defaults.
    assert "frequency_penalty" not in forced and "presence_penalty" not in forced
    assert (writing["frequency_penalty"], writing["presence_penalty"]) == (0.5, 0.3)
    assert answer.tools[0].name == "list_files"


def test_the_callers_own_penalties_win_and_max_tokens_defaults_to_the_setting(
    make_agent: Make, chat: ChatServer
) -> None:
    agent = make_agent(agent={"max_tokens": 77})
    agent.ask(Turn(WATERING, sampling=Sampling(frequency_penalty=0.0)))
    agent.ask(Turn(WATERING))
    mine, default = posted(chat)
    assert (mine["frequency_penalty"], mine["presence_penalty"]) == (0.0, 0.3)
    assert default["max_tokens"] == 77 and default["frequency_penalty"] == 0.5


def test_a_client_tool_call_comes_back_unrun_and_the_turn_continues_from_its_result(
    make_agent: Make, chat: ChatServer
) -> None:
    agent = make_agent()
    question = f"{WATERING} Check the weather in Paris first."
    events = list(agent.stream(Turn(question, client_tools=[WEATHER], tool_choice="get_weather")))
    first = events[-1].answer  # type: ignore[union-attr]
    assert isinstance(events[-1], Final) and first.finish_reason == "tool_calls"
    (calls,) = [e for e in events if isinstance(e, ClientToolCalls)]
    (call,) = first.tool_calls
    assert calls.calls == (call,) and (call.name, call.arguments) == (
        "get_weather",
        {"city": "text"},
    )
    assert first.tools == [] and first.to_dict()["tool_calls"][0]["name"] == "get_weather"
    request = posted(chat)[0]
    assert request["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert request["tools"][0]["function"]["name"] == "get_weather"  # the client's first

    # The client ran it and sends the conversation back, ending with the result.
    history = [
        Message("user", question),
        Message("assistant", "", (ToolCall(call.id, call.name, call.arguments),)),
        Message("tool", json.dumps({"city": "Paris", "sky": "sunny"}), tool_call_id=call.id),
    ]
    again = agent.ask(Turn(question, history=history, client_tools=[WEATHER]))
    sent = posted(chat)[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[1]["content"].startswith("Passages:\n\n[1] (garden, garden/watering)")  # grounded
    assert sent[2]["tool_calls"][0]["id"] == call.id and sent[3]["tool_call_id"] == call.id
    assert again.answer == 'echo: {"city": "Paris", "sky": "sunny"}'
    assert again.finish_reason == "stop" and again.citations[0].page == "garden/watering"
    assert again.mode == "generative"


def test_a_client_tool_wins_a_name_clash_with_herons(make_agent: Make, chat: ChatServer) -> None:
    theirs = Tool("list_files", "List the files on the client's laptop.")
    answer = make_agent().ask(
        Turn("List the files in my workspace", client_tools=[theirs], tool_choice="list_files")
    )
    (request,) = posted(chat)
    (named,) = [t["function"] for t in request["tools"]]
    assert named["name"] == "list_files" and named["description"] == theirs.description
    assert answer.tools == [] and answer.tool_calls[0].name == "list_files"  # not run here


@pytest.mark.parametrize("choice", ["auto", "required", "get_weather"])
def test_with_client_tools_the_model_is_offered_theirs_alone(
    make_agent: Make, chat: ChatServer, choice: str
) -> None:
    # list_files' own request, which triage forces without client tools; every tool of
    # Heron's allowed, so only the client's tools keep Heron's out.
    agent = make_agent(agent={"tool_safety": "execute"})
    answer = agent.ask(
        Turn("List the files in my workspace", client_tools=[WEATHER], tool_choice=choice)
    )
    (request,) = posted(chat)
    assert [t["function"]["name"] for t in request["tools"]] == ["get_weather"]
    assert answer.tools == []
    if choice == "auto":  # the replay answers auto in text
        assert (answer.finish_reason, answer.tool_calls) == ("stop", [])
    else:
        assert answer.finish_reason == "tool_calls"
        assert [c.name for c in answer.tool_calls] == ["get_weather"]


def test_a_required_call_is_made_on_the_last_step_too(make_agent: Make, chat: ChatServer) -> None:
    # One model call in all: it is the last, and a client's call ends the turn anyway.
    answer = make_agent(agent={"max_steps": 1}).ask(
        Turn(WATERING, client_tools=[WEATHER], tool_choice="required")
    )
    (request,) = posted(chat)
    assert request["tool_choice"] == "required"
    assert answer.finish_reason == "tool_calls" and answer.tool_calls[0].name == "get_weather"


def test_a_model_that_ignores_the_clients_tool_choice_is_an_error(
    make_agent: Make, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm_servers, "_answer", lambda body, openai: ("It is sunny.", []))
    agent = make_agent()
    with pytest.raises(ProviderError, match=r"did not call get_weather.*answered in text"):
        agent.ask(Turn(WATERING, client_tools=[WEATHER], tool_choice="get_weather"))
    with pytest.raises(ProviderError, match="did not call get_weather"):
        agent.stream(Turn(WATERING, client_tools=[WEATHER], tool_choice="required"))


def test_tool_choice_none_offers_no_tool_at_all(make_agent: Make, chat: ChatServer) -> None:
    answer = make_agent().ask(
        Turn("List the files in my workspace", client_tools=[WEATHER], tool_choice="none")
    )
    (request,) = posted(chat)
    assert "tools" not in request and answer.tools == [] and answer.tool_calls == []


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"tool_choice": "get_time"}, "tool_choice 'get_time' is neither"),
        ({"tool_choice": "required"}, "needs tools"),
        ({"answer": "poetic"}, "Unknown answer mode 'poetic'"),
        ({"client_tools": [WEATHER, WEATHER]}, "get_weather more than once"),
        ({"history": [Message("system", "be nice")]}, "pass system messages as instructions"),
        (
            {
                "history": [
                    Message("user", "hi"),
                    Message("tool", "{}", tool_call_id="call_9", name="get"),
                ]
            },
            "call 'call_9', which no earlier assistant message made",
        ),
        ({"sampling": Sampling(max_tokens=0)}, "max_tokens must be at least 1"),
    ],
)
def test_hooks_that_do_not_fit_together_are_refused_before_any_call(
    make_agent: Make, chat: ChatServer, options: dict, error: str
) -> None:
    agent = make_agent()
    with pytest.raises(InputError, match=error):
        agent.ask(Turn(WATERING, **options))
    with pytest.raises(InputError, match=error):
        agent.stream(Turn(WATERING, **options))  # before the first event
    assert posted(chat) == []
