"""The OpenAI and Anthropic providers through the broker, against the loopback replay of
both wire formats: payloads the real APIs accept, calls decoded, retries, fallbacks."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest

from heron.core.chat import Sampling
from heron.llm import (
    AuthError,
    BadRequest,
    Broker,
    ChatRequest,
    CoolingDown,
    Done,
    Message,
    NoModelAvailable,
    ProviderDown,
    ProviderTimeout,
    RateLimited,
    RequestError,
    TextDelta,
    ToolCall,
)
from heron.tools import Tool
from tests.llm_servers import ANTHROPIC_NAME, KEY, OPENAI_NAME, ChatServer

MakeBroker = Callable[..., Broker]
HELLO = ChatRequest((Message("system", "Be brief."), Message("user", "hello there")))
CONTACT = Tool(
    "osis.contact.list",
    "List contacts.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def dotted_tools(n: int) -> tuple[Tool, ...]:
    """``n`` tools whose names no provider accepts as they are (dots, over 64 characters)."""
    return tuple(
        Tool(f"server{i % 7}.{'very_long_namespace_' * 3}.tool.{i}", f"Tool {i}.") for i in range(n)
    )


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_plain_completion(make_broker: MakeBroker, chat: ChatServer, alias: str) -> None:
    done = make_broker().complete(HELLO, model=alias, fallbacks=False)
    assert done.text == "echo: hello there"
    assert done.model == alias
    assert done.usage.prompt_tokens == 11 and done.usage.completion_tokens == 7
    assert done.finish_reason == "stop"
    assert done.seconds > 0
    assert len(chat.requests) == 1


def test_anthropic_payload_shape(make_broker: MakeBroker, chat: ChatServer) -> None:
    make_broker().complete(HELLO, model="claude", fallbacks=False)
    (sent,) = chat.requests
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert sent["headers"]["x-api-key"] == KEY
    assert sent["body"]["system"] == "Be brief."
    assert sent["body"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello there"}]}
    ]
    assert sent["body"]["max_tokens"] > 0


@pytest.mark.parametrize("alias", ["gpt", "claude"])
@pytest.mark.parametrize("streaming", [False, True])
def test_forced_tool_decodes_to_original_name(
    make_broker: MakeBroker, chat: ChatServer, alias: str, streaming: bool
) -> None:
    request = ChatRequest(
        (Message("user", "find Ada"),), tools=(CONTACT,), tool_choice="osis.contact.list"
    )
    broker = make_broker()
    if streaming:
        events = list(broker.stream(request, model=alias, fallbacks=False))
        assert isinstance(events[-1], Done)
        done = events[-1].completion
    else:
        done = broker.complete(request, model=alias, fallbacks=False)
    (call,) = done.tool_calls
    assert call.name == "osis.contact.list"
    assert call.arguments == {"query": "text"}
    assert call.error is None
    assert done.finish_reason == "tool_calls"
    body = chat.requests[-1]["body"]
    sent = body["tools"][0]["function"]["name"] if alias == "gpt" else body["tools"][0]["name"]
    assert sent != "osis.contact.list" and "." not in sent


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_150_dotted_tools_never_make_an_invalid_request(
    make_broker: MakeBroker, chat: ChatServer, alias: str, caplog: pytest.LogCaptureFixture
) -> None:
    tools = dotted_tools(150)
    request = ChatRequest((Message("user", "go"),), tools=tools, tool_choice="required")
    with caplog.at_level(logging.WARNING, "heron.llm"):
        done = make_broker().complete(request, model=alias, fallbacks=False)
    (sent,) = chat.requests  # accepted at the first try: no 400
    body = sent["body"]
    names = [t["function"]["name"] if alias == "gpt" else t["name"] for t in body["tools"]]
    pattern = OPENAI_NAME if alias == "gpt" else ANTHROPIC_NAME
    assert all(pattern.match(n) for n in names)
    assert len(set(names)) == len(names)
    if alias == "gpt":
        assert len(names) == 128
        assert "sending the first 128 of 150" in caplog.text
    else:
        assert len(names) == 150  # no documented limit
    # "required": the replay calls the first tool offered, which decodes to the first given.
    assert done.tool_calls[0].name == tools[0].name


def test_the_replay_refuses_what_the_real_api_refuses(chat: ChatServer) -> None:
    """The fake's validation is live: the same 150 tools sent raw get OpenAI's 400s."""
    url = f"{chat.url}/v1/chat/completions"
    headers = {"Authorization": f"Bearer {KEY}"}
    raw = [{"type": "function", "function": {"name": t.name}} for t in dotted_tools(150)]
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": raw}
    too_many = httpx.post(url, json=body, headers=headers)
    assert too_many.status_code == 400
    assert too_many.json()["error"]["code"] == "array_above_max_length"
    bad_name = httpx.post(url, json={**body, "tools": raw[:3]}, headers=headers)
    assert bad_name.status_code == 400
    assert bad_name.json()["error"]["param"] == "tools[0].function.name"


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_retries_429_honouring_retry_after(
    make_broker: MakeBroker, chat: ChatServer, alias: str
) -> None:
    model = "gpt-test" if alias == "gpt" else "claude-test"
    chat.fail(model, 429, times=2, **{"retry-after": "0.15"})
    started = time.monotonic()
    done = make_broker().complete(HELLO, model=alias, fallbacks=False)
    assert done.text == "echo: hello there"
    assert len(chat.requests) == 3
    assert time.monotonic() - started >= 0.3


def test_a_retry_after_over_max_wait_goes_to_the_caller(
    make_broker: MakeBroker, chat: ChatServer
) -> None:
    """Not waited, not retried: the caller gets the 429 and its wait, and the model is
    skipped for that long (a second call sends nothing)."""
    chat.fail("gpt-test", 429, **{"retry-after": "3600"})
    broker = make_broker(llm={"max_wait": 0.1})
    started = time.monotonic()
    with pytest.raises(RateLimited) as caught:
        broker.complete(HELLO, fallbacks=False)
    assert time.monotonic() - started < 2
    assert caught.value.retry_after == 3600 and caught.value.http_status == 429
    with pytest.raises(CoolingDown) as cooling:
        broker.complete(HELLO, fallbacks=False)
    assert cooling.value.http_status == 429 and 3590 < (cooling.value.retry_after or 0) <= 3600
    assert len(chat.requests) == 1


def test_5xx_retried_then_falls_back(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("gpt-test", 500, times=3)  # 1 try + 2 retries, all failing
    done = make_broker(llm={"retries": 2}).complete(HELLO)
    assert done.model == "claude"
    assert [r["path"] for r in chat.requests] == ["/v1/chat/completions"] * 3 + ["/v1/messages"]


def test_anthropic_overloaded_529_is_retried(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("claude-test", 529)
    done = make_broker().complete(HELLO, model="claude")
    assert done.model == "claude" and len(chat.requests) == 2


def test_timeout_is_retried(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.delay = 1.0
    chat.fail("gpt-test", "slow")
    done = make_broker().complete(HELLO, timeout=0.3, fallbacks=False)
    assert done.text == "echo: hello there"
    assert len(chat.requests) == 2


def test_bad_key_is_not_retried_falls_back_and_is_redacted(
    make_broker: MakeBroker, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "sk-wrong-key-9876543210"
    monkeypatch.setenv("TEST_OPENAI_KEY", wrong)
    broker = make_broker()
    with pytest.raises(AuthError) as caught:
        broker.complete(HELLO, fallbacks=False)
    assert wrong not in str(caught.value)
    assert "TEST_OPENAI_KEY" in str(caught.value)
    assert len(chat.requests) == 1
    assert broker.complete(HELLO).model == "claude"


def test_missing_key_names_the_variable_and_falls_back(
    make_broker: MakeBroker, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_OPENAI_KEY")
    broker = make_broker()
    with pytest.raises(AuthError, match=r"\$TEST_OPENAI_KEY is not set"):
        broker.complete(HELLO, fallbacks=False)
    assert chat.requests == []
    assert broker.complete(HELLO).model == "claude"


def test_every_model_failing_lists_each(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("gpt-test", 500, times=9)
    chat.fail("claude-test", 500, times=9)
    with pytest.raises(NoModelAvailable) as caught:
        make_broker(llm={"retries": 1}).complete(HELLO)
    assert [type(e) for e in caught.value.errors] == [ProviderDown, ProviderDown]
    assert "'gpt'" in str(caught.value) and "'claude'" in str(caught.value)
    assert len(chat.requests) == 4


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_stream_yields_deltas_then_done(
    make_broker: MakeBroker, chat: ChatServer, alias: str
) -> None:
    events = list(make_broker().stream(HELLO, model=alias))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 3  # "echo: ", "hello ", "there"
    assert isinstance(events[-1], Done)
    assert events[-1].completion.text == "".join(deltas) == "echo: hello there"
    assert events[-1].completion.usage.completion_tokens == 7
    assert chat.requests[0]["body"]["stream"] is True


def test_stream_retries_before_the_first_token(make_broker: MakeBroker, chat: ChatServer) -> None:
    chat.fail("gpt-test", 500)
    events = list(make_broker().stream(HELLO))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "echo: hello there"
    assert len(chat.requests) == 2


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_stream_cut_after_a_token_is_not_retried(
    make_broker: MakeBroker, chat: ChatServer, alias: str
) -> None:
    chat.fail(f"{alias}-test", "cut")
    seen: list[str] = []
    with pytest.raises(ProviderTimeout, match="stream ended"):
        for event in make_broker().stream(HELLO, model=alias):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert seen == ["echo: "]
    assert len(chat.requests) == 1  # neither retried nor moved to another model


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_tool_results_round_trip(make_broker: MakeBroker, chat: ChatServer, alias: str) -> None:
    """A conversation after two calls: the replay checks each result answers a call."""
    calls = (
        ToolCall("call_1", "osis.contact.list", {"query": "Ada"}),
        ToolCall("call_2", "osis.contact.list", {"query": "Bob"}),
    )
    request = ChatRequest(
        (
            Message("system", "Use tools."),
            Message("user", "find Ada and Bob"),
            Message("assistant", "", tool_calls=calls),
            Message("tool", "Ada: 1", tool_call_id="call_1", name="osis.contact.list"),
            Message("tool", "Bob: 2", tool_call_id="call_2", name="osis.contact.list"),
        ),
        tools=(CONTACT,),
    )
    done = make_broker().complete(request, model=alias, fallbacks=False)
    assert "Bob: 2" in done.text
    body = chat.requests[0]["body"]
    if alias == "claude":
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert [b["tool_use_id"] for b in body["messages"][2]["content"]] == ["call_1", "call_2"]
    else:
        assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"query": "Ada"}'


def test_unoffered_or_malformed_call_is_flagged(make_broker: MakeBroker, chat: ChatServer) -> None:
    """A name the model invents comes back with ``error`` set, not as an exception."""
    from heron.llm.payload import ToolNames

    names = ToolNames(ChatRequest((Message("user", "x"),), tools=(CONTACT,)), "openai")
    assert names.call("c", "nope", "{}").error
    bad = names.call("c", names.encode(CONTACT.name), "{not json")
    assert bad.name == CONTACT.name and bad.arguments == {} and "not valid JSON" in bad.error


def test_empty_messages_is_a_clear_error(make_broker: MakeBroker, chat: ChatServer) -> None:
    with pytest.raises(RequestError, match="no messages"):
        make_broker().complete(ChatRequest(()))
    assert chat.requests == []


def test_megabyte_message_refused_before_any_call(
    make_broker: MakeBroker, chat: ChatServer
) -> None:
    huge = ChatRequest((Message("user", "word " * 200_000),))
    with pytest.raises(NoModelAvailable) as caught:
        make_broker().complete(huge)
    assert all(isinstance(e, BadRequest) for e in caught.value.errors)
    assert "context window" in str(caught.value)
    assert chat.requests == []


def test_forced_tool_must_be_offered(make_broker: MakeBroker) -> None:
    with pytest.raises(RequestError, match="not among the request's tools"):
        make_broker().complete(ChatRequest((Message("user", "x"),), tool_choice="nope"))


def test_unreachable_server_is_a_timeout_error(make_broker: MakeBroker) -> None:
    from heron.llm import parse_table
    from heron.settings import Settings

    table = parse_table(
        "models:\n  dead:\n    provider: openai\n    model: m\n    base_url: http://127.0.0.1:9/v1\n"
    )
    broker = Broker(table, Settings(llm={"retries": 0}))
    with pytest.raises(ProviderTimeout, match="could not reach"):
        broker.complete(HELLO, model="dead")


# -- sampling: each field on the wire in the provider's own words, or refused by name ----

EVERYTHING = Sampling(
    max_tokens=64,
    temperature=0.3,
    top_p=0.9,
    stop=("STOP",),
    seed=7,
    presence_penalty=0.5,
    frequency_penalty=0.25,
    response_format={"type": "json_object"},
)


def test_openai_gets_every_sampling_field(make_broker: MakeBroker, chat: ChatServer) -> None:
    # The replay refuses any field OpenAI's API does not have, as the API does.
    done = make_broker().complete(replace(HELLO, sampling=EVERYTHING), fallbacks=False)
    assert json.loads(done.text) == {"echo": "hello there"}
    body = chat.requests[0]["body"]
    assert {k: body[k] for k in ("temperature", "top_p", "stop", "seed", "max_tokens")} == {
        "temperature": 0.3,
        "top_p": 0.9,
        "stop": ["STOP"],
        "seed": 7,
        "max_tokens": 64,
    }
    assert body["presence_penalty"] == 0.5 and body["frequency_penalty"] == 0.25
    assert body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("alias", ["gpt", "claude"])
def test_stop_and_max_tokens_cut_the_answer(
    make_broker: MakeBroker, chat: ChatServer, alias: str
) -> None:
    broker = make_broker()
    stopped = broker.complete(replace(HELLO, sampling=Sampling(stop=(" there",))), model=alias)
    assert (stopped.text, stopped.finish_reason) == ("echo: hello", "stop")
    short = broker.complete(replace(HELLO, sampling=Sampling(max_tokens=2)), model=alias)
    assert (short.text, short.finish_reason) == ("echo: hello ", "length")
    bodies = [r["body"] for r in chat.requests]
    stop_field = "stop" if alias == "gpt" else "stop_sequences"
    assert bodies[0][stop_field] == [" there"] and bodies[1]["max_tokens"] == 2


def test_sampling_wins_over_the_plain_fields(make_broker: MakeBroker, chat: ChatServer) -> None:
    request = replace(HELLO, max_tokens=500, temperature=1.0, sampling=Sampling(max_tokens=2))
    make_broker().complete(request, fallbacks=False)
    body = chat.requests[0]["body"]
    assert body["max_tokens"] == 2 and body["temperature"] == 1.0


def test_anthropic_maps_what_it_has(make_broker: MakeBroker, chat: ChatServer) -> None:
    sampling = Sampling(max_tokens=30, temperature=0.2, top_p=0.5, stop=("x", "y"))
    make_broker().complete(replace(HELLO, sampling=sampling), model="claude", fallbacks=False)
    body = chat.requests[0]["body"]
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (30, 0.2, 0.5)
    assert body["stop_sequences"] == ["x", "y"]


@pytest.mark.parametrize(
    ("sampling", "named"),
    [
        (Sampling(seed=1), "'seed'"),
        (Sampling(presence_penalty=0.1), "'presence_penalty'"),
        (Sampling(frequency_penalty=0.1), "'frequency_penalty'"),
        (Sampling(response_format={"type": "json_object"}), "'response_format'.*JSON mode"),
        (Sampling(temperature=1.5), "temperature 1.5 is over Anthropic's maximum of 1"),
    ],
)
def test_anthropic_refuses_what_it_cannot_honour(
    make_broker: MakeBroker, chat: ChatServer, sampling: Sampling, named: str
) -> None:
    """Refused by name before any request: the API would refuse the field (the replay
    does: "Extra inputs are not permitted"), and dropping it would answer as if it had
    been honoured."""
    with pytest.raises(BadRequest, match=named):
        make_broker().complete(replace(HELLO, sampling=sampling), model="claude", fallbacks=False)
    assert chat.requests == []


def test_heron_s_own_defaults_are_left_out_not_refused(
    make_broker: MakeBroker, chat: ChatServer
) -> None:
    """The agent's repeat penalties are Heron's choice, not the caller's: a fallback to
    Anthropic still answers, without them."""
    sampling = Sampling(frequency_penalty=0.5, defaults=frozenset({"frequency_penalty"}))
    done = make_broker().complete(replace(HELLO, sampling=sampling), model="claude")
    assert done.text == "echo: hello there"
    assert "frequency_penalty" not in chat.requests[0]["body"]
    make_broker().complete(replace(HELLO, sampling=sampling), model="gpt")
    assert chat.requests[1]["body"]["frequency_penalty"] == 0.5


def test_a_refusal_falls_back_to_a_model_that_takes_the_field(chat: ChatServer) -> None:
    from heron.llm import parse_table
    from heron.settings import Settings

    table = parse_table(
        f"""
default: claude
models:
  claude: {{provider: anthropic, model: claude-test, base_url: "{chat.url}",
            api_key_env: TEST_ANTHROPIC_KEY, fallbacks: [gpt]}}
  gpt: {{provider: openai, model: gpt-test, base_url: "{chat.url}/v1",
         api_key_env: TEST_OPENAI_KEY}}
"""
    )
    done = Broker(table, Settings(llm={"retries": 0})).complete(
        replace(HELLO, sampling=Sampling(seed=3))
    )
    assert done.model == "gpt" and chat.requests[0]["body"]["seed"] == 3


@pytest.mark.parametrize(
    ("sampling", "says"),
    [
        (Sampling(temperature=2.5), "temperature must be between 0 and 2"),
        (Sampling(top_p=1.5), "top_p must be between 0 and 1"),
        (Sampling(frequency_penalty=-3), "frequency_penalty must be between -2 and 2"),
        (Sampling(stop=("a", "b", "c", "d", "e")), "at most 4"),
        (Sampling(max_tokens=0), "max_tokens must be positive"),
        (Sampling(response_format={"type": "xml"}), "response_format type must be one of"),
        (Sampling(response_format={"type": "json_schema"}), "needs {'json_schema'"),
    ],
)
def test_impossible_sampling_is_refused_before_any_call(
    make_broker: MakeBroker, chat: ChatServer, sampling: Sampling, says: str
) -> None:
    with pytest.raises(RequestError, match=re.escape(says)):
        make_broker().complete(replace(HELLO, sampling=sampling))
    assert chat.requests == []


def test_json_schema_goes_to_openai_as_it_is(make_broker: MakeBroker, chat: ChatServer) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    form = {"type": "json_schema", "json_schema": {"name": "count", "schema": schema}}
    done = make_broker().complete(
        replace(HELLO, sampling=Sampling(response_format=form)), fallbacks=False
    )
    assert json.loads(done.text) == {"n": 1}
    assert chat.requests[0]["body"]["response_format"] == form


def test_the_alias_temperature_is_the_default(chat: ChatServer) -> None:
    from heron.llm import parse_table
    from heron.settings import Settings

    table = parse_table(
        f"""
models:
  gpt: {{provider: openai, model: gpt-test, base_url: "{chat.url}/v1",
         api_key_env: TEST_OPENAI_KEY, temperature: 0.4}}
  claude: {{provider: anthropic, model: claude-test, base_url: "{chat.url}",
            api_key_env: TEST_ANTHROPIC_KEY, temperature: 0.6}}
"""
    )
    broker = Broker(table, Settings(llm={"retries": 0}))
    for alias in ("gpt", "claude"):
        broker.complete(HELLO, model=alias)
        broker.complete(replace(HELLO, sampling=Sampling(temperature=0.0)), model=alias)
    assert [r["body"]["temperature"] for r in chat.requests] == [0.4, 0.0, 0.6, 0.0]
