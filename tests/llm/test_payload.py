"""Fitting a request to one model before anything is sent."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from heron.llm import BadRequest, ChatRequest, Message, RequestError
from heron.llm.config import Capabilities, ModelSpec
from heron.llm.openai import OpenAIProvider
from heron.llm.payload import ToolNames, check, estimate_tokens, fit
from heron.tools import Tool

TOOLS = tuple(Tool(f"t.{i}", f"Tool {i}.") for i in range(5))
SPEC = ModelSpec("m", "openai", "m", capabilities=Capabilities(True, 2, "openai", 1000))
ASK = (Message("user", "hi"),)


def test_over_max_tools_keeps_the_first_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "heron.llm"):
        fitted = fit(ChatRequest(ASK, tools=TOOLS), SPEC)
    assert [t.name for t in fitted.tools] == ["t.0", "t.1"]
    assert "takes at most 2 tools" in caplog.text


def test_a_forced_tool_is_kept_past_the_limit() -> None:
    fitted = fit(ChatRequest(ASK, tools=TOOLS, tool_choice="t.4"), SPEC)
    assert [t.name for t in fitted.tools] == ["t.0", "t.4"]


def test_model_without_tool_calling() -> None:
    spec = replace(SPEC, capabilities=replace(SPEC.capabilities, tool_calling=False))
    assert fit(ChatRequest(ASK, tools=TOOLS), spec).tools == ()
    with pytest.raises(BadRequest, match="cannot call tools"):
        fit(ChatRequest(ASK, tools=TOOLS, tool_choice="required"), spec)


def test_context_window() -> None:
    assert estimate_tokens(ChatRequest((Message("user", "x" * 3000),))) > 1000
    with pytest.raises(BadRequest, match="context window of 1000"):
        fit(ChatRequest((Message("user", "x" * 3000),)), SPEC)
    with pytest.raises(BadRequest):  # the answer's room counts too
        fit(ChatRequest(ASK, max_tokens=2000), SPEC)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (ChatRequest(()), "no messages"),
        (ChatRequest(("hi",)), "Message objects"),  # type: ignore[arg-type]
        (ChatRequest(ASK, max_tokens=0), "max_tokens must be positive"),
        (ChatRequest(ASK, tools=(TOOLS[0], TOOLS[0])), "share a name"),
        (ChatRequest(ASK, tool_choice="t.9"), "not among the request's tools"),
    ],
)
def test_refused_before_any_model(request_: ChatRequest, message: str) -> None:
    with pytest.raises(RequestError, match=message):
        check(request_)


def test_openai_official_endpoint_gets_max_completion_tokens() -> None:
    request = ChatRequest(ASK, max_tokens=5)
    names = ToolNames(request, "openai")
    official = replace(SPEC, base_url="https://api.openai.com/v1")
    other = replace(SPEC, base_url="http://127.0.0.1:11434/v1")
    assert (
        OpenAIProvider(official, "k")._payload(request, names, stream=False)[
            "max_completion_tokens"
        ]
        == 5
    )
    assert OpenAIProvider(other, None)._payload(request, names, stream=False)["max_tokens"] == 5
