"""``raw/ALIAS`` on ``/v1``: the broker alone, driven by the real ``openai`` SDK against
the real server and the loopback replay of OpenAI's and Anthropic's wire formats (whose
recorded bodies show what reached the provider): messages as sent, streaming piece by
piece, OpenAI's other fields passed on or refused by name, and an upstream 429 answered
as a 429 with its ``Retry-After`` (raw, grounded and JSON-RPC)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from heron.server import create_app
from heron.settings import Settings
from tests.llm_servers import ChatServer
from tests.server.conftest import Served, running

MODELS = """
default: gpt
models:
  gpt:
    provider: openai
    model: gpt-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
  claude:
    provider: anthropic
    model: claude-test
    base_url: {url}
    api_key_env: TEST_ANTHROPIC_KEY
  backed:
    provider: openai
    model: backed-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
    fallbacks: [claude]
"""
HELLO = [
    {"role": "system", "content": "Answer in one line."},
    {"role": "user", "content": "hello there"},
]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def raw(heron_home: Path, replay: ChatServer) -> Iterator[Served]:
    models = heron_home / "models.yml"
    models.write_text(MODELS.format(url=replay.url))
    settings = Settings(llm={"models_file": models, "retries": 0})
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


@pytest.fixture(scope="module")
def client(raw: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{raw.url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def chat(replay: ChatServer) -> ChatServer:
    replay.requests.clear()
    replay.failures.clear()
    return replay


def bodies(chat: ChatServer, path: str = "/v1/chat/completions") -> list[dict[str, Any]]:
    return chat.posted(path)


def test_raw_sends_the_messages_as_they_are(client: openai.OpenAI, chat: ChatServer) -> None:
    done = client.chat.completions.create(model="raw/gpt", messages=HELLO, max_tokens=20)
    assert done.choices[0].message.content == "echo: hello there"
    assert done.model == "raw/gpt" and done.choices[0].finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (11, 7)
    (body,) = bodies(chat)
    # No grounding: the system message is the client's alone, no passages were added.
    assert body["messages"] == HELLO and body["max_tokens"] == 20
    assert not hasattr(done, "citations") or done.model_extra.get("citations") is None


def test_raw_streams_piece_by_piece_with_the_sdk(client: openai.OpenAI, chat: ChatServer) -> None:
    stream = client.chat.completions.create(
        model="raw/gpt",
        messages=HELLO,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    pieces = [d.content for d in deltas if d.content]
    assert pieces == ["echo: ", "hello ", "there"]  # the provider's pieces, as they came
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finishing] == ["stop"]
    usage = [c.usage for c in chunks if c.usage]
    assert len(usage) == 1 and usage[0].total_tokens == 18 and chunks[-1].choices == []
    assert bodies(chat)[0]["stream"] is True


def test_raw_falls_back_and_says_which_model_answered(
    client: openai.OpenAI, chat: ChatServer
) -> None:
    chat.fail("backed-test", 500)
    done = client.chat.completions.create(model="raw/backed", messages=HELLO)
    assert done.model == "raw/claude" and done.choices[0].message.content == "echo: hello there"
    (anthropic,) = bodies(chat, "/v1/messages")
    assert anthropic["system"] == "Answer in one line."


def test_raw_tool_calls_go_back_and_forth(client: openai.OpenAI, chat: ChatServer) -> None:
    asked = [{"role": "user", "content": "weather in Oslo?"}]
    forced = {"type": "function", "function": {"name": "get_weather"}}
    done = client.chat.completions.create(
        model="raw/gpt", messages=asked, tools=[WEATHER], tool_choice=forced
    )
    (call,) = done.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and done.choices[0].finish_reason == "tool_calls"
    result = {"role": "tool", "tool_call_id": call.id, "content": "sunny"}
    history = [*asked, done.choices[0].message.model_dump(exclude_none=True), result]
    after = client.chat.completions.create(model="raw/gpt", messages=history, tools=[WEATHER])
    assert after.choices[0].message.content == "echo: sunny"
    assert bodies(chat)[-1]["messages"][-1] == result


def test_openai_fields_reach_an_openai_provider(client: openai.OpenAI, chat: ChatServer) -> None:
    client.chat.completions.create(
        model="raw/gpt",
        messages=HELLO,
        tools=[WEATHER],
        parallel_tool_calls=False,
        reasoning_effort="low",
        service_tier="flex",
        store=True,
        metadata={"team": "search"},
        prediction={"type": "content", "content": "echo"},
        user="u-1",
    )
    (body,) = bodies(chat)
    sent = {k: body.get(k) for k in ("parallel_tool_calls", "reasoning_effort", "service_tier")}
    assert sent == {"parallel_tool_calls": False, "reasoning_effort": "low", "service_tier": "flex"}
    assert body["store"] is True and body["metadata"] == {"team": "search"}
    assert body["prediction"]["content"] == "echo" and body["user"] == "u-1"


def test_anthropic_maps_what_it_can_and_refuses_the_rest_by_name(
    client: openai.OpenAI, chat: ChatServer
) -> None:
    client.chat.completions.create(
        model="raw/claude",
        messages=HELLO,
        tools=[WEATHER],
        parallel_tool_calls=False,
        metadata={"user_id": "u-7"},
        store=False,
        modalities=["text"],
    )
    (body,) = bodies(chat, "/v1/messages")
    assert body["metadata"] == {"user_id": "u-7"}
    assert body["tool_choice"]["disable_parallel_tool_use"] is True
    assert "store" not in body and "modalities" not in body
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="raw/claude", messages=HELLO, reasoning_effort="high")
    assert "reasoning_effort" in caught.value.message
    assert len(bodies(chat, "/v1/messages")) == 1  # refused before any call


def test_grounded_answers_refuse_provider_fields_by_name(
    client: openai.OpenAI, chat: ChatServer
) -> None:
    for name, value in [
        ("reasoning_effort", "low"),
        ("web_search_options", {}),
        ("service_tier", "flex"),
        ("metadata", {"a": "b"}),
        ("audio", {"voice": "alloy", "format": "wav"}),
        ("parallel_tool_calls", False),
    ]:
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="gpt", messages=HELLO, **{name: value})
        assert name in caught.value.message and "raw/gpt" in caught.value.message
    assert bodies(chat) == []
    neutral = client.chat.completions.create(
        model="gpt", messages=HELLO, store=False, modalities=["text"], service_tier="auto"
    )
    assert neutral.choices[0].message.content


def test_models_lists_each_alias_raw_too(client: openai.OpenAI) -> None:
    ids = [m.id for m in client.models.list()]
    assert {"gpt", "raw/gpt", "raw/claude", "raw/backed"} <= set(ids)
    assert client.models.retrieve("raw/claude").owned_by == "heron:anthropic"


def test_an_upstream_429_reaches_the_client_with_its_retry_after(
    raw: Served, chat: ChatServer
) -> None:
    chat.fail("gpt-test", 429, **{"retry-after": "7"})
    url = f"{raw.url}/v1/chat/completions"
    waits = []
    for body in ({"model": "raw/gpt"}, {"model": "raw/gpt", "stream": True}, {"model": "gpt"}):
        reply = httpx.post(url, json={**body, "messages": HELLO}, timeout=10)
        assert reply.status_code == 429, reply.text
        waits.append(int(reply.headers["retry-after"]))
        error = reply.json()["error"]
        assert error["type"] == "rate_limit_error" and "429" in error["message"]
    # The first was the provider's; then the model cools down for its Retry-After, and the
    # stream and the grounded answer are refused at once with what is left of the 7 s.
    assert waits[0] == 7 and all(0 < wait <= 7 for wait in waits)
    assert len(bodies(chat)) == 1
    rpc = httpx.post(
        f"{raw.url}/rpc",
        json={"jsonrpc": "2.0", "id": 1, "method": "agent.chat", "params": {"message": "hi"}},
        timeout=10,
    ).json()
    assert rpc["error"]["code"] == -32007 and 0 < rpc["error"]["data"]["retry_after"] <= 7


def test_ready_and_metrics_show_a_cooling_model(raw: Served, chat: ChatServer) -> None:
    chat.fail("gpt-test", 429, **{"retry-after": "30"})
    httpx.post(
        f"{raw.url}/v1/chat/completions", json={"model": "raw/gpt", "messages": HELLO}, timeout=10
    )
    ready = httpx.get(f"{raw.url}/ready", timeout=10).json()["checks"]["models"]
    assert ready["ok"] is True and [c["alias"] for c in ready["cooling"]] == ["gpt"]
    assert ready["default_available"] is False
    metrics = httpx.get(f"{raw.url}/metrics", timeout=10).text
    assert 'heron_model_cooling{model="gpt"} 1.0' in metrics
    cooled = re.search(r'heron_model_cooldowns_total\{model="gpt"\} (\d+)', metrics)
    assert cooled and int(cooled.group(1)) >= 1  # this module cooled it more than once
