"""The real bundled SmolLM2 through the broker: text, forced tool calls, streaming,
sampling (each field changes what llama.cpp generates) and JSON answers."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from heron.core.chat import Sampling
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
from heron.llm.errors import BadRequest
from heron.llm.local import CALL_STRING_CHARS, bounded, bundled_model_path, gguf_path, load_model
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
    return Broker(RoutingTable({"local": LOCAL_SPEC}, "local"), Settings(llm={"retries": 0}))


def test_the_bundled_gguf_is_the_fetched_file_checked() -> None:
    path = bundled_model_path(Settings().models_dir)
    assert path == gguf_path(Settings().models_dir) and path.stat().st_size > 50_000_000


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
    request = ChatRequest(
        (Message("system", "Be brief."), Message("user", "Count from one to five.")),
        max_tokens=24,
        temperature=0,
    )
    events = list(broker.stream(request))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 2
    assert isinstance(events[-1], Done) and events.count(events[-1]) == 1
    assert events[-1].completion.text == "".join(deltas)
    # llama.cpp reports no usage in a stream: both sides are counted, as it counts them.
    assert events[-1].completion.usage == broker.complete(request).usage


def test_a_stream_left_unread_does_not_hold_the_model(broker: Broker) -> None:
    """A reader that stops after the first piece and never closes the stream (a client
    gone, a guard that has seen enough) once kept the model's lock for good: the next
    call, from another thread as a server makes it, waited forever."""
    request = ChatRequest((Message("user", "Count from one to fifty."),), max_tokens=48)
    left = broker.stream(request)
    assert isinstance(next(left), TextDelta)  # and never read again, never closed
    done: list[Completion] = []
    other = threading.Thread(target=lambda: done.append(broker.complete(request)))
    other.start()
    other.join(timeout=60)
    assert done and done[0].text.strip(), "the next call waited on the unread stream"
    left.close()


def say(broker: Broker, prompt: str, **sampling: Any) -> Completion:
    return broker.complete(ChatRequest((Message("user", prompt),), sampling=Sampling(**sampling)))


def test_each_sampling_field_changes_the_generation(broker: Broker) -> None:
    greedy = say(broker, "Write a sentence about cats.", max_tokens=12, temperature=0)
    assert greedy.usage.completion_tokens == 12 and greedy.finish_reason == "length"
    # stop: the same greedy text, cut where the stop sequence would have begun.
    word = next(w for w in greedy.text.split()[2:] if len(w) >= 4)
    stopped = say(
        broker, "Write a sentence about cats.", max_tokens=12, temperature=0, stop=(word,)
    )
    assert stopped.text == greedy.text[: greedy.text.index(word)]
    assert stopped.finish_reason == "stop"
    # seed: a hot sample is the same for the same seed; top_p 0 keeps only the best token.
    hot = {"max_tokens": 12, "temperature": 1.5}
    first = say(broker, "Write a sentence about cats.", seed=5, **hot)
    assert say(broker, "Write a sentence about cats.", seed=5, **hot).text == first.text
    assert say(broker, "Write a sentence about cats.", seed=5, top_p=0.0, **hot).text == greedy.text
    # temperature: hot, another seed gives another sample; cold, the seed does not matter.
    assert say(broker, "Write a sentence about cats.", seed=6, **hot).text != first.text
    cold = say(broker, "Write a sentence about cats.", seed=6, max_tokens=12, temperature=0)
    assert cold.text == greedy.text
    # penalties: the greedy answer repeats a word; penalised, it repeats it less.
    echo = "Write the word cat five times: cat cat"
    plain = say(broker, echo, max_tokens=16, temperature=0).text.lower().count("cat")
    for penalty in ("frequency_penalty", "presence_penalty"):
        cats = say(broker, echo, max_tokens=16, temperature=0, **{penalty: 2.0})
        assert cats.text.lower().count("cat") < plain, penalty


def test_a_json_schema_holds_the_answer(broker: Broker) -> None:
    schema = {
        "type": "object",
        "properties": {"sky_is_blue": {"type": "boolean"}},
        "required": ["sky_is_blue"],
        "additionalProperties": False,
    }
    form = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    done = say(broker, "Is the sky blue?", max_tokens=24, response_format=form)
    value = json.loads(done.text)
    assert set(value) == {"sky_is_blue"} and isinstance(value["sky_is_blue"], bool)


def test_a_schema_llama_cpp_cannot_hold_is_refused(broker: Broker) -> None:
    form = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "strange"}}}
    with pytest.raises(BadRequest, match=r"response_format schema.*Unrecognized schema"):
        say(broker, "Hi", max_tokens=4, response_format=form)


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
    assert load_model(bundled_model_path(Settings().models_dir)) is load_model(
        bundled_model_path(Settings().models_dir)
    )
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


def test_a_call_schema_bounds_every_unbounded_string() -> None:
    schema = {
        "type": "object",
        "properties": {
            "type": {"type": "string"},  # a property called "type" is a name, not a keyword
            "title": {"type": "string", "maxLength": 80},
            "level": {"type": "string", "enum": ["low", "high"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "$defs": {"note": {"type": "string"}},
    }
    out = bounded(schema)
    props = out["properties"]
    assert props["type"]["maxLength"] == props["tags"]["items"]["maxLength"] == CALL_STRING_CHARS
    assert props["title"]["maxLength"] == 80 and "maxLength" not in props["level"]
    assert out["properties"]["when"]["anyOf"][0]["maxLength"] == CALL_STRING_CHARS
    assert out["$defs"]["note"]["maxLength"] == CALL_STRING_CHARS
    assert "maxLength" not in schema["properties"]["type"]  # the tool's own schema is kept
