"""Budgets that hold (issue 45): every attack of the run, against a real ``heron serve`` on
loopback, its model the replay of OpenAI's wire format (``tests/llm_servers.py``), driven
by the real ``openai`` SDK and plain HTTP. A key's tokens are reserved before the work
they pay for, batches and parallel calls included, and settled after, for ``raw/`` models
and streams a client leaves too; a revoked key's open streams end; a chat stream resumes
only for the key that started it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
import httpx2
import openai
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from heron.keys import open_keys
from heron.server import create_app
from heron.server.doors.rpc import RATE_LIMITED
from heron.settings import Settings
from tests.llm_servers import ChatServer
from tests.server.conftest import Served, build_home, heron_env, running

MODELS = """default: gpt
models:
  gpt:
    provider: openai
    model: gpt-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
  quoting:
    provider: openai
    model: quoting-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
    answers: extractive
"""
HELLO = [{"role": "user", "content": "hello there"}]
QUESTION = "How do I roll back a Deployment?"
#: A long answer, word by word: with ``ChatServer.pace`` a stream that lasts.
LONG = " ".join(f"step{i} revision{i * 7} kubectl{i * 3}" for i in range(70))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, replay: ChatServer) -> Iterator[Served]:
    """A tiny library indexed (a grounded answer is written by the model), the replay as
    the only model, Heron's own answer budget (512 tokens a call), no retries."""
    tmp = tmp_path_factory.mktemp("budgets")
    models = tmp / "models.yml"
    models.write_text(MODELS.format(url=replay.url))
    env = {
        **heron_env(tmp),
        "HERON_MODELS_FILE": str(models),
        "HERON_AGENT_MAX_TOKENS": "512",
        "HERON_LLM_RETRIES": "0",
    }
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        mp.delenv("HERON_API_TOKEN", raising=False)
        build_home(tmp)
        settings = Settings()
        with running(create_app(settings)) as (url, server):
            yield Served(url, tmp / "home", settings, server)


@pytest.fixture
def chat(replay: ChatServer) -> Iterator[ChatServer]:
    replay.requests.clear()
    yield replay
    replay.failures.clear()
    replay.replies.clear()
    replay.pace, replay.delay, replay.usage = 0.0, 0.0, (11, 7)


def make_key(served: Served, name: str, *scopes: str, **limits: Any) -> str:
    with open_keys(served.settings) as keys:
        return keys.create(name, scopes or ("chat", "read"), **limits)[1]


def usage(served: Served, name: str) -> tuple[int, int]:
    """The key's tokens in and out this month, as ``keys.usage`` tells an admin."""
    found = [u for u in served.rpc("keys.usage")["result"] if u["name"] == name]
    return (found[0]["tokens_in"], found[0]["tokens_out"]) if found else (0, 0)


def tokens(served: Served, name: str) -> int:
    return sum(usage(served, name))


def sdk(served: Served, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=token, max_retries=0)


def wait_for(check: Any, seconds: float = 5.0) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def test_a_batch_of_chats_cannot_spend_past_the_budget(served: Served, chat: ChatServer) -> None:
    """The attack: tpm 1000 and 1000 tokens a month, 20 ``agent.chat`` calls in one batch,
    each answer 600 tokens by the provider's count: all 20 were served (12,000 tokens)."""
    token = make_key(served, "batch", tpm=1000, monthly_tokens=1000)
    chat.usage = (400, 200)
    calls = [
        {"jsonrpc": "2.0", "id": i, "method": "agent.chat", "params": {"message": QUESTION}}
        for i in range(20)
    ]
    with served.client(headers={"authorization": f"Bearer {token}"}) as client:
        answers = client.post("/rpc", json=calls).json()
    answered = [a for a in answers if "result" in a]
    refused = [a["error"] for a in answers if a.get("error", {}).get("code") == RATE_LIMITED]
    assert len(answered) + len(refused) == 20, answers
    assert answered and refused, f"{len(answered)} of 20 served"
    assert tokens(served, "batch") <= 1000
    for error in refused:  # which limit, and when it resets
        assert error["data"]["limit"] in ("1000 tokens per 60 s", "1000 tokens this month")
        assert error["data"]["retry_after"] >= 1 and "retry in" in error["message"]


def test_parallel_calls_reserve_before_they_run(served: Served, chat: ChatServer) -> None:
    """The attack: 10 parallel ``/v1`` calls of a key with tpm 1000, each of up to 300
    tokens: 5 of 10 went through. Each reserves the most it can spend before the model is
    called; one that cannot is a 429 in OpenAI's shape naming the limit and its reset."""
    token = make_key(served, "parallel", tpm=1000)
    chat.usage, chat.delay = (50, 250), 1.0
    chat.fail("gpt-test", "slow", times=10)  # each answer takes a second: all overlap
    client = sdk(served, token)

    def call(_: int) -> Any:
        try:
            return client.chat.completions.create(model="raw/gpt", messages=HELLO, max_tokens=300)
        except openai.RateLimitError as exc:
            return exc

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(call, range(10)))
    refused = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert refused and len(refused) < 10
    assert tokens(served, "parallel") <= 1000
    error = refused[0]
    assert int(error.response.headers["retry-after"]) >= 1
    body = error.response.json()["error"]
    assert body["type"] == "rate_limit_error" and "1000 tokens per 60 s" in body["message"]


def test_mcp_s_ask_is_held_to_the_same_budget(served: Served, chat: ChatServer) -> None:
    """MCP's ``ask`` runs ``agent.chat`` under the same rule: its answer is charged once,
    and the next ask that cannot hold an answer's budget is a tool error naming the
    limit (it was served, as each call was only checked against what was spent)."""
    token = make_key(served, "mcp", tpm=1000)
    chat.usage = (400, 200)

    async def ask_twice() -> list[Any]:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60)
        async with http, Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as c:
            return [await c.call_tool("ask", {"message": QUESTION}) for _ in range(2)]

    first, second = anyio.run(ask_twice)
    assert not first.is_error, first.content
    assert tokens(served, "mcp") == 600  # the provider's count, charged once
    assert second.is_error and "1000 tokens per 60 s" in second.content[0].text


def test_raw_models_are_charged(served: Served, chat: ChatServer) -> None:
    """The attack: ``raw/`` models were never charged, streamed or not."""
    token = make_key(served, "raw")
    client = sdk(served, token)
    done = client.chat.completions.create(model="raw/gpt", messages=HELLO, max_tokens=20)
    assert done.usage is not None and done.usage.total_tokens == 18
    assert tokens(served, "raw") == 18  # the provider's own count
    list(client.chat.completions.create(model="raw/gpt", messages=HELLO, stream=True))
    assert tokens(served, "raw") == 36


@pytest.mark.parametrize("model", ["raw/gpt", "gpt"])
def test_a_stream_the_client_leaves_is_charged_for_what_it_sent(
    served: Served, chat: ChatServer, model: str
) -> None:
    """The attack: a client that reads 10 pieces of a stream and leaves was never
    charged (the charge came with the last chunk, which it never waited for)."""
    name = f"leaver-{model.replace('/', '-')}"
    token = make_key(served, name)
    chat.pace, chat.replies = 0.05, [LONG]  # about 10 s of answer
    stream = sdk(served, token).chat.completions.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    pieces = 0
    for chunk in stream:
        pieces += bool(chunk.choices and chunk.choices[0].delta.content)
        if pieces == 10:
            break
    stream.close()
    assert wait_for(lambda: usage(served, name)[1] >= 10), "the stream was never charged"
    # What it sent, not the whole answer it left (about 700 tokens by the same count).
    assert usage(served, name)[0] > 0 and usage(served, name)[1] < 350


def test_an_answer_no_model_wrote_is_charged_alike_at_every_door(
    served: Served, chat: ChatServer
) -> None:
    """An answer quoted from the passages with no model call (a model whose answers are
    extractive) was charged its counted text on ``/v1``, nothing on ``/chat/stream``,
    ``agent.chat`` or MCP's ask: a key with a token limit asked for free by three doors
    what the fourth charged. The same answer now costs the same by every door."""
    doors = ("v1", "stream", "rpc", "mcp")
    keys = {door: make_key(served, f"quoted-{door}") for door in doors}
    asked = {"model": "quoting", "messages": [{"role": "user", "content": QUESTION}]}
    body = {"message": QUESTION, "model": "quoting"}
    with served.client(headers={"authorization": f"Bearer {keys['v1']}"}) as client:
        done = client.post("/v1/chat/completions", json=asked)
    assert done.status_code == 200, done.text
    assert tokens(served, "quoted-v1") == done.json()["usage"]["total_tokens"] > 0
    page = served.client(headers={"authorization": f"Bearer {keys['stream']}"})
    with page, page.stream("POST", "/chat/stream", json=body) as streamed:
        assert any(line == "event: final" for line in streamed.iter_lines())
    with served.client(headers={"authorization": f"Bearer {keys['rpc']}"}) as client:
        call = {"jsonrpc": "2.0", "id": 1, "method": "agent.chat", "params": body}
        assert "result" in client.post("/rpc", json=call).json()

    async def ask() -> Any:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {keys['mcp']}"}, timeout=60)
        async with http, Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as c:
            return await c.call_tool("ask", body)

    assert not anyio.run(ask).is_error
    charged = tokens(served, "quoted-v1")
    for door in doors[1:]:
        assert wait_for(lambda door=door: tokens(served, f"quoted-{door}") == charged), door
    assert not chat.posted("/v1/chat/completions")  # no model call was made


def _follow(client: httpx.Client, method: str, path: str, seen: dict[str, Any], **kw: Any) -> None:
    """Read one event stream to its end, noting its lines and when it ended."""
    try:
        with client.stream(method, path, **kw) as response:
            seen["status"] = response.status_code
            seen["started"] = time.monotonic()
            for line in response.iter_lines():
                seen.setdefault("lines", []).append(line)
        seen["ended"] = time.monotonic()
    except httpx.HTTPError as exc:
        seen["error"] = repr(exc)


def test_a_revoked_key_s_open_streams_end(served: Served, chat: ChatServer) -> None:
    """The attack: after ``heron keys revoke``, the key's open job and intervention
    streams kept receiving. Revoked from another process (the CLI's way), every stream of
    the key ends promptly with an event saying why: jobs, interventions, a chat answer."""
    token = make_key(served, "streamer", "read", "jobs", "chat")
    chat.pace, chat.replies = 0.1, [LONG]  # a 20-second answer
    streams = {
        "jobs": ("GET", "/jobs/stream?room=ops", {}),
        "interventions": ("GET", "/interventions/stream?room=ops", {}),
        "chat": ("POST", "/chat/stream", {"json": {"message": QUESTION}}),
    }
    seen: dict[str, dict[str, Any]] = {name: {} for name in streams}
    client = httpx.Client(
        base_url=served.url, headers={"authorization": f"Bearer {token}"}, timeout=30
    )
    threads = [
        threading.Thread(target=_follow, args=(client, m, p, seen[n]), kwargs=kw, daemon=True)
        for n, (m, p, kw) in streams.items()
    ]
    for thread in threads:
        thread.start()
    assert wait_for(lambda: all("started" in s for s in seen.values())), seen
    assert wait_for(lambda: any("token" in line for line in seen["chat"].get("lines", [])))
    with open_keys(served.settings) as keys:
        keys.revoke("streamer")
    revoked = time.monotonic()
    for thread in threads:
        thread.join(6)
    client.close()
    for name, stream in seen.items():
        assert stream.get("status") == 200, (name, stream)
        assert "ended" in stream, f"the {name} stream still runs 6 s after the revocation"
        assert stream["ended"] - revoked < 4, name
        tail = "\n".join(stream["lines"][-3:])
        assert "event: revoked" in tail and "'streamer' was revoked" in tail, (name, tail)


def test_a_chat_stream_resumes_only_for_the_key_that_started_it(
    served: Served, chat: ChatServer
) -> None:
    """The attack: alpha's ``/chat/stream`` resumed for beta, given its id."""
    alpha, beta = make_key(served, "alpha"), make_key(served, "beta")
    with served.client(headers={"authorization": f"Bearer {alpha}"}) as client:
        with client.stream("POST", "/chat/stream", json={"message": QUESTION}) as started:
            lines = started.iter_lines()
            data = next(line for line in lines if line.startswith("data:"))
        sid = data.split('"stream_id": "')[1].split('"')[0]
        mine = client.get(f"/chat/stream/{sid}")
    assert mine.status_code == 200 and "event: final" in mine.text
    with served.client(headers={"authorization": f"Bearer {beta}"}) as client:
        theirs = client.get(f"/chat/stream/{sid}")
        again = client.post("/chat/stream", json={}, headers={"last-event-id": f"{sid}:0"})
    assert theirs.status_code == 404 and "final" not in theirs.text
    assert again.status_code == 404 and "final" not in again.text
