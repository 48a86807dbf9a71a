"""``/v1`` honours what OpenAI clients send, driven by the real ``openai`` SDK against the
real server: messages, sampling, response_format, client tools, usage, and
``/v1/embeddings``.

The server's models.yml has the bundled local model (``local``, the default) and two
aliases on the loopback replay of OpenAI's and Anthropic's wire formats
(tests/llm_servers.py), whose recorded request bodies show what reached the provider.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from heron.agent.prompt import RULES
from heron.server import create_app
from heron.settings import Settings
from tests import llm_servers
from tests.llm_servers import ChatServer
from tests.server.conftest import WEATHER, Served, running

MODELS = """
default: local
models:
  local:
    provider: local
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
"""
QUESTION = "How do I roll back a Deployment to its previous revision?"
FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def compat(
    heron_home: Path, replay: ChatServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    models = heron_home / "models.yml"
    models.write_text(MODELS.format(url=replay.url))
    settings = Settings(
        llm={"models_file": models, "retries": 0},
        library={"roots": [tmp_path_factory.getbasetemp()]},
    )
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


@pytest.fixture(scope="module")
def client(compat: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{compat.url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def chat(replay: ChatServer) -> ChatServer:
    """The replay, its record of requests emptied for this test."""
    replay.requests.clear()
    return replay


def sent(chat: ChatServer) -> list[dict[str, Any]]:
    """The bodies the OpenAI-format replay received."""
    return chat.posted("/v1/chat/completions")


# -- /v1/embeddings ------------------------------------------------------------------------


def test_embeddings_serve_the_bundled_model(client: openai.OpenAI, compat: Served) -> None:
    texts = ["A Pod runs containers.", "kubectl rollout undo"]
    # The SDK asks for base64 by default and decodes it; float is asked for explicitly.
    packed = client.embeddings.create(model="text-embedding-3-small", input=texts)
    plain = client.embeddings.create(model="heron", input=texts, encoding_format="float")
    assert packed.model == plain.model == "all-MiniLM-L6-v2-dynamic-int8"
    assert [d.index for d in packed.data] == [0, 1]
    vectors = np.array([d.embedding for d in plain.data])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.allclose(np.array([d.embedding for d in packed.data]), vectors, atol=1e-6)
    # The vectors are those Heron indexes its libraries with.
    indexed = compat.server.config.app.state.runtime.store.embedder.embed(texts)
    assert np.allclose(indexed, vectors, atol=1e-6)
    # Real token counts: [CLS] and [SEP] around each text's WordPiece tokens.
    hello = client.embeddings.create(model="heron", input="hello world")
    assert hello.usage.prompt_tokens == hello.usage.total_tokens == 4
    assert plain.usage.prompt_tokens > 2 * 4


def test_embeddings_base64_is_little_endian_float32(compat: Served) -> None:
    with compat.client() as http:
        raw = http.post(
            "/v1/embeddings",
            json={"model": "x", "input": ["hello"], "encoding_format": "base64", "user": "u"},
        ).json()
        floats = http.post("/v1/embeddings", json={"model": "x", "input": "hello"}).json()
    decoded = np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(decoded, floats["data"][0]["embedding"], atol=1e-7)
    assert raw["object"] == "list" and raw["data"][0]["object"] == "embedding"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"input": [[15339, 1917]]}, "token ids"),
        ({"input": [1, 2, 3]}, "token ids"),
        ({"input": []}, "input is empty"),
        ({"input": "x", "dimensions": 128}, "384-dimensional"),
        ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"input": ["x"] * 2049}, "at most 2,048"),
    ],
)
def test_embeddings_refuse_clearly(client: openai.OpenAI, body: dict[str, Any], says: str) -> None:
    with pytest.raises(openai.BadRequestError, match=says):
        client.embeddings.create(model="heron", **body)


# -- messages ------------------------------------------------------------------------------


def test_the_whole_conversation_reaches_the_model(client: openai.OpenAI, chat: ChatServer) -> None:
    done = client.chat.completions.create(
        model="gpt",
        messages=[
            {"role": "system", "content": "Answer like a pirate."},
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": [{"type": "text", "text": "Ahoy, Ada!"}]},
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Roll back "},
                    {"type": "text", "text": "a Deployment?"},
                ],
            },
        ],
    )
    rewrite, body = sent(chat)  # a capable model first makes the turn standalone
    assert "standalone question" in rewrite["messages"][0]["content"]
    assert done.model_extra["grounding"]["libraries"] == ["tiny"]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    system, first, reply, last = body["messages"]
    # The client's system and developer messages, after Heron's own rules.
    assert system["content"].startswith(RULES)
    assert "Answer like a pirate.\n\nBe brief." in system["content"]
    assert (first["content"], reply["content"]) == ("My name is Ada.", "Ahoy, Ada!")
    # The last user message is the question: its parts joined, grounded with passages.
    assert "Roll back a Deployment?" in last["content"] and "tasks/rollback" in last["content"]
    assert done.choices[0].message.content.startswith("echo: ")
    assert "session_id" not in body and "tasks/rollback" in {
        c["page"] for c in done.model_extra["citations"]
    }


def test_a_server_side_session_still_works(client: openai.OpenAI, chat: ChatServer) -> None:
    first = ask(client, question="My name is Ada.")
    session = {"session_id": first.model_extra["session_id"]}
    ask(client, question="What is my name?", extra_body=session)
    earlier = [m["content"] for m in sent(chat)[-1]["messages"][1:-1]]
    assert earlier[0].endswith("My name is Ada.") and earlier[1].startswith("echo: ")


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"role": "system", "content": "Be brief."}], "No user message"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
            r"messages\[0\].content\[0\]: a 'image_url' part",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "c9", "content": "1"},
            ],
            r"messages\[1\]: tool_call_id 'c9' answers no tool call",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            r"messages\[1\]: the messages end with the assistant's",
        ),
        ([{"role": "function", "name": "f", "content": "1"}], "'function' is not a role"),
    ],
)
def test_messages_the_agent_cannot_answer_are_refused(
    client: openai.OpenAI, chat: ChatServer, messages: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=says):
        client.chat.completions.create(model="gpt", messages=messages)
    assert sent(chat) == []


# -- sampling ------------------------------------------------------------------------------


def ask(client: openai.OpenAI, **options: Any) -> Any:
    return client.chat.completions.create(
        model=options.pop("model", "gpt"),
        messages=[{"role": "user", "content": options.pop("question", QUESTION)}],
        **options,
    )


def test_sampling_reaches_the_provider(client: openai.OpenAI, chat: ChatServer) -> None:
    ask(
        client,
        max_completion_tokens=40,
        temperature=0.2,
        top_p=0.5,
        stop=["\n\n"],
        seed=11,
        presence_penalty=0.1,
        frequency_penalty=0.3,
    )
    ask(client, max_tokens=30, stop="END")
    first, second = sent(chat)
    assert {k: first.get(k) for k in ("max_tokens", "temperature", "top_p", "stop", "seed")} == {
        "max_tokens": 40,
        "temperature": 0.2,
        "top_p": 0.5,
        "stop": ["\n\n"],
        "seed": 11,
    }
    assert (first["presence_penalty"], first["frequency_penalty"]) == (0.1, 0.3)
    assert (second["max_tokens"], second["stop"]) == (30, ["END"])


def test_max_tokens_and_stop_shape_the_answer(client: openai.OpenAI, chat: ChatServer) -> None:
    # The replay writes "echo: <the grounded question>"; its tokens are words.
    short = ask(client, max_tokens=3)
    assert short.choices[0].finish_reason == "length"
    assert len(short.choices[0].message.content.split()) == 3
    stopped = ask(client, stop=["Deployment"])
    assert stopped.choices[0].finish_reason == "stop"
    assert "Deployment" not in stopped.choices[0].message.content


def test_the_local_model_honours_max_tokens(client: openai.OpenAI) -> None:
    done = ask(
        client, model="local", max_tokens=3, temperature=0, extra_body={"answer": "generative"}
    )
    assert done.model_extra["mode"] == "generative"
    assert 0 < done.usage.completion_tokens <= 3 and done.usage.prompt_tokens > 50
    assert done.choices[0].finish_reason == "length"


@pytest.mark.parametrize("stream", [False, True])
def test_an_extractive_answer_honours_max_tokens(client: openai.OpenAI, stream: bool) -> None:
    # Counted as /v1 reports them (the model's tokenizer), not by the characters estimate;
    # "length" when the limit left something out, "stop" when the answer fits whole.
    for max_tokens, finish in ((16, "length"), (400, "stop")):
        options = {
            "model": "local",
            "max_tokens": max_tokens,
            "extra_body": {"answer": "extractive"},
        }
        if stream:
            chunks = list(
                ask(client, stream=True, stream_options={"include_usage": True}, **options)
            )
            reasons = [c.choices[0].finish_reason for c in chunks if c.choices]
            assert reasons[-1] == finish
            assert 0 < chunks[-1].usage.completion_tokens <= max_tokens
        else:
            done = ask(client, **options)
            assert done.model_extra["mode"] == "extractive"
            assert 0 < done.usage.completion_tokens <= max_tokens, done.usage
            assert done.choices[0].finish_reason == finish, done


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"n": 2}, "n: Heron answers with one choice"),
        ({"logprobs": True}, "logprobs"),
        ({"logit_bias": {"50256": -100}}, "logit_bias"),
        ({"temperature": 2.5}, "temperature"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop takes at most 4"),
        ({"response_format": {"type": "yaml"}}, "response_format type must be one of"),
        ({"functions": [{"name": "f", "parameters": {}}]}, "legacy functions"),
    ],
)
def test_what_heron_cannot_honour_is_a_400_naming_it(
    client: openai.OpenAI, chat: ChatServer, options: dict[str, Any], says: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=says):
        ask(client, **options)
    assert sent(chat) == []


@pytest.mark.parametrize("field", ["seed", "presence_penalty", "frequency_penalty"])
def test_a_provider_without_the_parameter_is_a_400_naming_it(
    client: openai.OpenAI, chat: ChatServer, field: str
) -> None:
    refused = rf"model 'claude': cannot honour '{field}'"
    with pytest.raises(openai.BadRequestError, match=refused):
        ask(client, model="claude", **{field: 1})
    with pytest.raises(openai.BadRequestError, match=refused):  # before the first chunk
        ask(client, model="claude", stream=True, **{field: 1})
    assert chat.posted("/v1/messages") == []


def test_unknown_fields_are_ignored(client: openai.OpenAI, chat: ChatServer) -> None:
    done = ask(client, user="ada", extra_body={"metadata_v9": {"x": 1}, "top_k": 3})
    assert done.choices[0].message.content
    (body,) = sent(chat)  # the replay refuses fields OpenAI does not know: none leaked
    assert "metadata_v9" not in body and "top_k" not in body and "user" not in body


# -- response_format -----------------------------------------------------------------------

VERDICT = {
    "type": "object",
    "properties": {"can_roll_back": {"type": "boolean"}},
    "required": ["can_roll_back"],
    "additionalProperties": False,
}


def test_json_modes_reach_the_provider_and_parse(client: openai.OpenAI, chat: ChatServer) -> None:
    # Room for the whole echo: JSON cut at max_tokens does not parse, here as at OpenAI.
    loose = ask(client, response_format={"type": "json_object"}, max_tokens=1000)
    assert isinstance(json.loads(loose.choices[0].message.content), dict)
    form = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT}}
    strict = ask(client, response_format=form)
    assert json.loads(strict.choices[0].message.content) == {"can_roll_back": True}
    assert [b["response_format"] for b in sent(chat)] == [{"type": "json_object"}, form]


def test_the_local_model_writes_json_to_the_schema(client: openai.OpenAI) -> None:
    # The bundled model answers extractively by default; a JSON format makes it generate.
    form = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT}}
    done = ask(client, model="local", response_format=form, max_tokens=24)
    assert done.model_extra["mode"] == "generative"
    value = json.loads(done.choices[0].message.content)
    assert set(value) == {"can_roll_back"} and isinstance(value["can_roll_back"], bool)


def test_json_with_an_extractive_answer_is_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match=r"extractive answer .* cannot honour"):
        ask(
            client,
            model="local",
            response_format={"type": "json_object"},
            extra_body={"answer": "extractive"},
        )
    with pytest.raises(openai.BadRequestError, match=r"'response_format'.*JSON mode"):
        ask(client, model="claude", response_format={"type": "json_object"})


# -- client tools --------------------------------------------------------------------------


def test_a_forced_client_tool_comes_back_as_a_tool_call(
    client: openai.OpenAI, chat: ChatServer
) -> None:
    done = ask(
        client, question="What is the weather in Paris?", tools=[WEATHER], tool_choice=FORCE_WEATHER
    )
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id
    assert json.loads(call.function.arguments) == {"city": "text"}
    (body,) = sent(chat)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert "get_weather" in [t["function"]["name"] for t in body["tools"]]
    # The client runs it and sends the result back: the turn goes on from there.
    follow = client.chat.completions.create(
        model="gpt",
        messages=[
            {"role": "user", "content": "What is the weather in Paris?"},
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "18 C and sunny"},
        ],
        tools=[WEATHER],
    )
    assert follow.choices[0].finish_reason == "stop"
    assert "18 C and sunny" in follow.choices[0].message.content
    last = sent(chat)[-1]["messages"]
    assert [m["role"] for m in last[-3:]] == ["user", "assistant", "tool"]
    assert "What is the weather in Paris?" in last[-3]["content"]
    assert last[-1] == {"role": "tool", "tool_call_id": call.id, "content": "18 C and sunny"}


def test_the_local_model_calls_a_forced_client_tool(client: openai.OpenAI) -> None:
    done = ask(
        client,
        model="local",
        question="What is the weather in Paris?",
        tools=[WEATHER],
        tool_choice=FORCE_WEATHER,
        max_tokens=32,
    )
    (call,) = done.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and done.choices[0].finish_reason == "tool_calls"
    assert isinstance(json.loads(call.function.arguments)["city"], str)


def test_tool_choice_none_offers_no_tool(client: openai.OpenAI, chat: ChatServer) -> None:
    done = ask(client, tools=[WEATHER], tool_choice="none")
    assert done.choices[0].finish_reason in ("stop", "length")
    assert done.choices[0].message.tool_calls is None
    (body,) = sent(chat)
    assert "tools" not in body and "tool_choice" not in body


def test_tool_calls_stream_as_deltas(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="gpt",
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            tools=[WEATHER],
            tool_choice=FORCE_WEATHER,
            stream=True,
        )
    )
    deltas = [
        c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    ((call,),) = deltas
    assert (call.index, call.type, call.function.name) == (0, "function", "get_weather")
    assert json.loads(call.function.arguments) == {"city": "text"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_herons_own_finish_reasons_ride_beside_openais(
    client: openai.OpenAI, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ask(client).model_extra["finish_detail"] is None
    answer_for = llm_servers._answer

    def loop(body: dict[str, Any], openai: bool) -> tuple[str, list]:
        text, calls = answer_for(body, openai)
        return ("Heron. Tools. " * 200, []) if text else (text, calls)

    monkeypatch.setattr(llm_servers, "_answer", loop)  # the replay's model loops
    done = ask(client)
    assert done.choices[0].finish_reason == "stop"  # the extractive answer, whole
    assert done.model_extra["finish_detail"] == "degenerate"
    *_, last = ask(client, stream=True)
    assert last.choices[0].finish_reason == "stop"
    assert last.model_extra["finish_detail"] == "degenerate"


def test_hints_to_api_clients_name_the_field_not_a_flag(client: openai.OpenAI) -> None:
    done = ask(client, model="local", question="What is the capital of Mongolia?")
    text = done.choices[0].message.content
    assert text.startswith("I found nothing about this"), text
    assert '"answer": "generative"' in text and "--" not in text and "heron " not in text


# -- usage ---------------------------------------------------------------------------------


def test_stream_usage_comes_in_a_last_chunk_when_asked(client: openai.OpenAI) -> None:
    def chunks(**options: Any) -> list[Any]:
        return list(ask(client, stream=True, **options))

    asked = chunks(max_tokens=3, stream_options={"include_usage": True})
    *body, last = asked
    # The replay's reported counts, for the agent's one model call.
    assert last.choices == [] and last.usage.prompt_tokens == 11
    assert last.usage.completion_tokens == 7 and last.usage.total_tokens == 18
    assert all(c.usage is None for c in body) and body[-1].choices[0].finish_reason == "length"
    assert "tasks/rollback" in {c["page"] for c in last.model_extra["citations"]}
    # Not asked: the usage rides on the finishing chunk alone, as it always has.
    plain = chunks()
    assert [c.usage.total_tokens for c in plain if c.usage] == [18]


def test_usage_is_real_for_every_kind_of_answer(client: openai.OpenAI) -> None:
    generated = ask(client)
    assert (generated.usage.prompt_tokens, generated.usage.completion_tokens) == (11, 7)
    # An extractive answer makes no model call: the question and the answer counted
    # with the model's tokenizer.
    quoted = ask(client, model="local", question="How do I roll back a Deployment?")
    assert quoted.model_extra["mode"] == "extractive"
    from heron.llm.config import LOCAL_SPEC
    from heron.llm.local import count_tokens

    text = quoted.choices[0].message.content
    assert (
        quoted.usage.completion_tokens
        == count_tokens(LOCAL_SPEC, [text], Settings().models_dir)
        > 0
    )
    assert quoted.usage.prompt_tokens == count_tokens(
        LOCAL_SPEC, ["How do I roll back a Deployment?"], Settings().models_dir
    )
