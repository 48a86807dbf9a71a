"""Every client-given structure is measured before it is used (issue 33): each test is
the attack, a small request that bought a large cost (or a crash) before the rule."""

from __future__ import annotations

import copy
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.agent.loop import Prompt
from heron.core.chat import ChatRequest, Message, Sampling
from heron.llm import local
from heron.llm.config import BUNDLED_MODEL, ModelSpec
from heron.llm.errors import BadRequest
from heron.settings import Settings
from tests.security.deadline import within
from tests.security.served import serve
from tests.server.conftest import Served

SMALL = {
    "HERON_OPENAI_MAX_MESSAGES": "8",
    "HERON_OPENAI_MAX_INPUT_TOKENS": "2000",
    "HERON_EMBEDDINGS_MAX_TOKENS": "200000",
    "HERON_EMBEDDINGS_CONCURRENCY": "1",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("costs"), SMALL) as s:
        yield s


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": "local", "messages": [{"role": "user", "content": "hi"}], **fields}


def schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}


def tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


STRINGS = {f"p{i}": {"type": "string", "maxLength": 9000} for i in range(20)}
HALF = dict(list(STRINGS.items())[:10])
ATTACKS = {
    "minLength": (
        chat(response_format=schema_format({"type": "string", "minLength": 20_000_000})),
        "response_format.json_schema.schema.minLength",
    ),
    "a tool's maxItems": (
        chat(tools=[tool({"type": "object", "properties": {"x": {"maxItems": 10**9}}})]),
        "tools[0].function.parameters.properties.x.maxItems",
    ),
    "a forced tool's maxLength": (
        chat(
            tools=[tool({"type": "object", "properties": {"s": {"maxLength": 10**7}}})],
            tool_choice={"type": "function", "function": {"name": "f"}},
        ),
        "tools[0].function.parameters.properties.s.maxLength",
    ),
    "nested quantifiers": (
        chat(response_format=schema_format({"type": "string", "pattern": "^(a{1000}){1000}$"})),
        "response_format.json_schema.schema.pattern",
    ),
    "a bound that is no number": (
        chat(response_format=schema_format({"type": "string", "maxLength": "99999999"})),
        "response_format.json_schema.schema.maxLength",
    ),
    "depth": (
        chat(response_format=schema_format(nested(25))),
        "response_format.json_schema.schema" + ".items" * 20,
    ),
    "enum values": (
        chat(response_format=schema_format({"enum": list(range(1001))})),
        "response_format.json_schema.schema.enum",
    ),
    "properties": (
        chat(
            response_format=schema_format(
                {"type": "object", "properties": {f"p{i}": {} for i in range(1001)}}
            )
        ),
        "response_format.json_schema.schema.properties",
    ),
    "total size": (
        chat(response_format=schema_format({"type": "object", "properties": STRINGS})),
        "response_format.json_schema.schema.properties.p13.maxLength",
    ),
    "size across schemas": (
        chat(tools=[tool({"type": "object", "properties": HALF}) for _ in range(2)]),
        "tools[1].function.parameters.properties.p3.maxLength",
    ),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_schema_past_a_bound_is_a_400_naming_the_field(served: Served, attack: str) -> None:
    body, param = ATTACKS[attack]
    started = time.perf_counter()
    with served.client() as http:
        reply = http.post("/v1/chat/completions", json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert param in error["message"]
    assert time.perf_counter() - started < 2  # refused before any model work


def test_too_many_messages_or_tokens_are_a_400(served: Served) -> None:
    many = [{"role": "user", "content": "hi"}] * 9
    long = [{"role": "user", "content": "word " * 1500}]
    with served.client() as http:
        for messages, said in ((many, "HERON_OPENAI_MAX_MESSAGES"), (long, "MAX_INPUT_TOKENS")):
            reply = http.post("/v1/chat/completions", json=chat(messages=messages))
            assert reply.status_code == 400, reply.text
            error = reply.json()["error"]
            assert error["param"] == "messages" and said in error["message"]


def test_embeddings_are_capped_by_tokens(tmp_path: Path) -> None:
    with serve(tmp_path, {"HERON_EMBEDDINGS_MAX_TOKENS": "100"}) as s, s.client() as http:
        # Few inputs, each long: the count of inputs alone let this through.
        reply = http.post("/v1/embeddings", json={"model": "m", "input": ["word " * 100] * 2})
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["param"] == "input"
        assert "HERON_EMBEDDINGS_MAX_TOKENS" in reply.json()["error"]["message"]
        ok = http.post("/v1/embeddings", json={"model": "m", "input": ["a Pod"]})
        assert ok.status_code == 200, ok.text


def test_many_tiny_embedding_inputs_are_refused_by_their_count(tmp_path: Path) -> None:
    """Issue 45's attack: 2,048 inputs of two characters (36 KB) were 2,048 estimated
    tokens, within the cap, and cost 7.8-9.4 s of the server's CPU under the default
    profile: each text costs the models a run of their own, whatever its length. Refused,
    in OpenAI's shape, the bound named; the most it lets through costs under 2 s."""
    # The default profile and cap, whatever the module's server set in the environment.
    env = {"HERON_EMBEDDER": "auto", "HERON_EMBEDDINGS_MAX_TOKENS": "8192"}
    with serve(tmp_path, env) as s, s.client() as http:
        http.post("/v1/embeddings", json={"model": "m", "input": ["warm up both models"]})
        started = time.process_time()  # the whole process: the server is a thread of it
        reply = http.post("/v1/embeddings", json={"model": "m", "input": ["ab"] * 2048})
        refused_in = time.process_time() - started
        assert reply.status_code == 400, reply.text[:300]
        error = reply.json()["error"]
        assert (error["type"], error["param"]) == ("invalid_request_error", "input")
        assert "HERON_EMBEDDINGS_MAX_TOKENS" in error["message"]
        found = re.search(r"at most ([\d,]+) texts", error["message"])
        assert found, error["message"]
        most = int(found[1].replace(",", ""))
        assert 16 <= most < 2048 and refused_in < 0.5
        started = time.process_time()
        ok = http.post("/v1/embeddings", json={"model": "m", "input": ["ab"] * most})
        cpu = time.process_time() - started
        assert ok.status_code == 200, ok.text[:300]
        assert len(ok.json()["data"]) == most and cpu < 2.0, f"{most} texts: {cpu:.2f} s CPU"
        over = http.post("/v1/embeddings", json={"model": "m", "input": ["ab"] * (most + 1)})
        assert over.status_code == 400


def test_embeddings_are_bounded_in_concurrency_and_stop_when_the_client_goes(
    served: Served,
) -> None:
    """One slot (``HERON_EMBEDDINGS_CONCURRENCY=1``): a second request while a long one
    runs is a 429 with Retry-After; the long one's client leaving frees the slot at its
    next batch, long before the whole request would have been embedded."""
    texts = ["the control plane schedules pods onto nodes " * 16] * 800  # ~100k tokens
    body = json.dumps({"model": "m", "input": texts}).encode()
    url = httpx.URL(served.url)
    first = socket.create_connection((url.host, url.port))
    first.sendall(
        f"POST /v1/embeddings HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    time.sleep(1.5)  # read and embedding: the slot is taken
    with served.client() as http:
        busy = http.post("/v1/embeddings", json={"model": "m", "input": ["a Pod"]})
        assert busy.status_code == 429, busy.text
        assert busy.headers["retry-after"] == "1"
        first.close()  # the client leaves
        left = time.perf_counter()
        while (
            reply := http.post("/v1/embeddings", json={"model": "m", "input": ["a"]})
        ).status_code == 429:
            assert time.perf_counter() - left < 15, "the work went on after its client left"
            time.sleep(0.2)
        assert reply.status_code == 200


def test_prompt_fitting_is_linear() -> None:
    """16k short turns (0.74 MB) cost about 10 s of CPU when the whole prompt was
    estimated again after each dropped turn."""
    history = [
        Message("user" if i % 2 == 0 else "assistant", "a short turn of a long chat")
        for i in range(16_000)
    ]
    prompt = Prompt("What now?", [], "", [], history, None)
    started = time.process_time()
    notes = prompt.fit(4000)
    assert time.process_time() - started < 1.0
    assert prompt.tokens() <= 4000 < Prompt("What now?", [], "", [], history, None).tokens()
    assert notes and prompt.history and prompt.history[0].role == "user"
    # The turns kept are the latest that fit: one more would not.
    more = copy.copy(prompt)
    more.history = history[len(history) - len(prompt.history) - 2 :]
    assert more.tokens() > 4000


def spec() -> ModelSpec:
    return ModelSpec(alias="local", provider="local", model=BUNDLED_MODEL)


def json_request(schema: dict[str, Any]) -> ChatRequest:
    return ChatRequest(
        (Message("user", "hi"),),
        sampling=Sampling(max_tokens=4, response_format=schema_format(schema)),
    )


@pytest.mark.parametrize("bound", [1999, 100_000])
def test_a_grammar_llama_cpp_cannot_hold_is_a_400_not_a_crash(bound: int) -> None:
    """``maxLength: 1999`` made llama.cpp's grammar sampler a null pointer, and
    ``100000`` overflowed its parser's stack: either was a segfault of the whole server.
    Run in a forked child, so a crash fails this test rather than the suite."""

    def attack() -> str:
        try:
            local.LocalProvider(spec(), Settings().models_dir).complete(
                json_request({"type": "string", "maxLength": bound}), timeout=30
            )
        except BadRequest as exc:
            return str(exc)
        return "answered"

    said, _ = within(60, attack)
    assert "maxLength" in said and "1000" in said


def test_a_grammar_is_refused_without_waiting_for_the_model() -> None:
    """The grammar is made and measured before the model's lock: a generation under way
    (the lock held here) does not hold up the refusal, nor the refusal it."""
    provider = local.LocalProvider(spec(), Settings().models_dir)
    local.load_model(provider.path)
    outcome: list[str] = []

    def ask() -> None:
        try:
            provider.complete(json_request({"type": "string", "maxLength": 5000}), timeout=30)
            outcome.append("answered")
        except BadRequest as exc:
            outcome.append(str(exc))

    with local._lock:
        worker = threading.Thread(target=ask)
        worker.start()
        worker.join(10)
        assert outcome and "maxLength" in outcome[0]
