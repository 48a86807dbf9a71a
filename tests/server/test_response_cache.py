"""The response cache (issue 50) on a real server on loopback, its model the replay of
OpenAI's wire format, driven by the real ``openai`` SDK: an identical request is answered
without a provider call, streamed or not; ``Cache-Control`` opts a request out, a key
made with ``no_cache`` opts out for good; no answer crosses contexts or keys with other
model rules; hits, misses and what they saved are in ``/metrics``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from heron.core.chat import Completion
from heron.keys import open_keys
from heron.llm.cache import CacheControl, ResponseCache
from heron.server import create_app
from heron.settings import Settings
from tests.llm_servers import ChatServer
from tests.server.conftest import Served, running

MODELS = """default: gpt
models:
  gpt:
    provider: openai
    model: gpt-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
    input_cost_per_token: 0.001
    output_cost_per_token: 0.002
litellm_settings:
  cache: true
  cache_params: {{type: local, ttl: 600}}
"""


@pytest.fixture(scope="module")
def served(heron_home: Path, replay: ChatServer, tmp_path_factory: pytest.TempPathFactory):
    models = tmp_path_factory.mktemp("cache") / "models.yml"
    models.write_text(MODELS.format(url=replay.url))
    settings = Settings(llm={"models_file": models, "retries": 0}, contexts={"ops": {}})
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


@pytest.fixture
def chat(replay: ChatServer) -> ChatServer:
    replay.requests.clear()
    return replay


def sdk(served: Served, token: str = "unused", **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{served.url}/v1", api_key=token, max_retries=0, default_headers=headers
    )


def key(served: Served, name: str, **options: Any) -> str:
    with open_keys(served.settings) as keys:
        return keys.create(name, ("chat", "read"), **options)[1]


def ask(client: openai.OpenAI, text: str, **options: Any) -> str:
    messages = [{"role": "user", "content": text}]
    done = client.chat.completions.create(
        model="raw/gpt", messages=messages, max_tokens=8, **options
    )
    return done.choices[0].message.content or ""


def calls(chat: ChatServer) -> int:
    return len(chat.posted("/v1/chat/completions"))


def test_an_identical_request_is_answered_from_the_cache(served: Served, chat: ChatServer) -> None:
    client = sdk(served)
    assert ask(client, "what is a pod?") == "echo: what is a pod?"
    assert ask(client, "what is a pod?") == "echo: what is a pod?"
    assert calls(chat) == 1
    stream = client.chat.completions.create(
        model="raw/gpt", messages=[{"role": "user", "content": "what is a pod?"}], max_tokens=8,
        stream=True,
    )  # fmt: skip
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == (
        "echo: what is a pod?"
    )
    assert calls(chat) == 1  # streamed back from the cache too
    assert ask(client, "what is a pod?", temperature=0.5) and calls(chat) == 2  # not identical
    with served.client() as http:
        metrics = http.get("/metrics").text
    assert 'heron_model_cache_hits_total{model="gpt"} 2.0' in metrics
    assert 'heron_model_cache_misses_total{model="gpt"} 2.0' in metrics
    saved = 2 * (11 * 0.001 + 7 * 0.002)  # the replay's usage, at the alias's price
    assert f'heron_cache_saved_dollars_total{{model="gpt"}} {saved}' in metrics


def test_cache_control_and_a_no_cache_key_opt_out(served: Served, chat: ChatServer) -> None:
    ask(sdk(served), "opt out")
    ask(sdk(served, **{"Cache-Control": "no-cache"}), "opt out")
    assert calls(chat) == 2  # asked not to be answered from the cache
    ask(sdk(served, **{"Cache-Control": "no-store"}), "not kept")
    ask(sdk(served), "not kept")
    assert calls(chat) == 4  # the first answer was not kept
    ask(sdk(served), "opt out", extra_body={"cache": {"no-cache": True}})  # LiteLLM's field
    assert calls(chat) == 5
    with pytest.raises(openai.BadRequestError, match="cache must be an object of booleans"):
        ask(sdk(served), "opt out", extra_body={"cache": "off"})
    bypass = sdk(served, key(served, "fresh", no_cache=True))
    ask(bypass, "opt out")
    ask(bypass, "opt out")
    assert calls(chat) == 7


def test_answers_never_cross_contexts_or_model_rules(served: Served, chat: ChatServer) -> None:
    ask(sdk(served, key(served, "a", models=["gpt"])), "shared?")
    ask(sdk(served, key(served, "b", models=["gpt"])), "shared?")
    assert calls(chat) == 1  # the same context and the same model rules
    ask(sdk(served, key(served, "c", models=["g*"])), "shared?")
    assert calls(chat) == 2  # other model rules
    ask(sdk(served, **{"X-Heron-Context": "ops"}), "shared?")
    assert calls(chat) == 3  # another context


def test_entries_expire_after_their_ttl_and_the_oldest_go_first() -> None:
    now = [0.0]
    cache = ResponseCache(ttl=10, max_size=2, clock=lambda: now[0])
    cache.put("a", Completion("A"))
    now[0] = 9.9
    assert cache.get("a") == Completion("A")
    now[0] = 10.0
    assert cache.get("a") is None
    for name in "bcd":
        cache.put(name, Completion(name))
    assert cache.get("b") is None and len(cache) == 2
    assert CacheControl.from_header("No-Cache, max-age=0") == CacheControl(False, True)
