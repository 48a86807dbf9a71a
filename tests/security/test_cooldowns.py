"""Cooldowns per cause (issue 45): one client must not cool a model for everyone. Against
a real ``heron serve`` on loopback whose models are the replay of OpenAI's wire format
(``tests/llm_servers.py``), driven by the real ``openai`` SDK: a timeout a request caused
with its own ``max_tokens`` cools nothing; a probe is answered at its first token, so a
slow stream does not hold it; and (the rule, on a clock of the test's) a probe that has
not answered by its deadline is a failure."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from heron.llm.config import ModelSpec
from heron.llm.cooldowns import Cooldowns
from heron.server import create_app
from heron.settings import Settings
from tests.llm_servers import ChatServer
from tests.server.conftest import Served, heron_env, running

#: One alias per test: a model's cooldown is the whole process's.
MODELS = """default: plain
models:
  plain:
    provider: openai
    model: plain-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
  own:
    provider: openai
    model: own-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
  probed:
    provider: openai
    model: probed-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
"""
HELLO = [{"role": "user", "content": "hello there"}]
COOLDOWN = 3.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, replay: ChatServer) -> Iterator[Served]:
    """A one-second timeout, no retries, a model cooled at its first failure for 3 s."""
    tmp = tmp_path_factory.mktemp("cooldowns")
    models = tmp / "models.yml"
    models.write_text(MODELS.format(url=replay.url))
    env = {
        **heron_env(tmp),
        "HERON_MODELS_FILE": str(models),
        "HERON_LLM_TIMEOUT": "1",
        "HERON_LLM_RETRIES": "0",
        "HERON_LLM_ALLOWED_FAILS": "0",
        "HERON_LLM_COOLDOWN": str(COOLDOWN),
    }
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        mp.delenv("HERON_CONFIG", raising=False)
        mp.delenv("HERON_API_TOKEN", raising=False)
        settings = Settings()
        with running(create_app(settings)) as (url, server):
            yield Served(url, tmp / "home", settings, server)


@pytest.fixture
def chat(replay: ChatServer) -> Iterator[ChatServer]:
    yield replay
    replay.failures.clear()
    replay.replies.clear()
    replay.pace, replay.delay = 0.0, 0.0


@pytest.fixture
def client(served: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)


def ask(client: openai.OpenAI, model: str, **fields: Any) -> Any:
    """The answer, or the ``openai.APIStatusError`` it was."""
    try:
        return client.chat.completions.create(model=model, messages=HELLO, **fields)
    except openai.APIStatusError as exc:
        return exc


def test_a_timeout_of_the_request_s_own_max_tokens_cools_nothing(
    client: openai.OpenAI, chat: ChatServer
) -> None:
    """The attack: one tenant's request for 50,000 tokens at once ran past the timeout,
    and the model was cooled for every tenant (503 for the others)."""
    chat.delay = 3.0
    chat.fail("own-test", "slow")
    mine = ask(client, "raw/own", max_tokens=50_000)
    assert isinstance(mine, openai.APIStatusError), mine
    assert "50000" in mine.message and "max_tokens" in mine.message, mine.message
    assert "not cooled" in mine.message
    theirs = ask(client, "raw/own", max_tokens=10)
    assert not isinstance(theirs, openai.APIStatusError), theirs.message
    assert theirs.choices[0].message.content == "echo: hello there"


def test_a_model_that_times_out_on_an_ordinary_request_still_cools(
    client: openai.OpenAI, chat: ChatServer
) -> None:
    """The control: an ordinary request (Heron's own answer budget or less) that times
    out says the model is unwell, and it is skipped by everyone for its cooldown."""
    chat.delay = 3.0
    chat.fail("plain-test", "slow")
    first = ask(client, "raw/plain", max_tokens=10)
    assert isinstance(first, openai.APIStatusError) and "within 1 s" in first.message
    cooled = ask(client, "raw/plain", max_tokens=10)
    assert isinstance(cooled, openai.APIStatusError) and cooled.status_code == 503
    assert 1 <= int(cooled.response.headers["retry-after"]) <= COOLDOWN


def test_a_slow_stream_does_not_hold_the_probe(client: openai.OpenAI, chat: ChatServer) -> None:
    """The attack: after a 3 s cooldown, a stream read slowly held the model's one probe
    to its end, and every other request was a 503 (at 4 s and at 8 s). A probe is
    answered at its first token: the cooldown ends there."""
    chat.fail("probed-test", 500)
    assert ask(client, "raw/probed").status_code == 502
    assert ask(client, "raw/probed").status_code == 503  # cooling
    time.sleep(COOLDOWN + 0.2)
    chat.pace, chat.replies = 0.3, [" ".join(f"word{i}" for i in range(30))]  # a 9 s answer
    first = threading.Event()

    def slow_reader() -> None:
        stream = client.chat.completions.create(model="raw/probed", messages=HELLO, stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                first.set()
                time.sleep(0.5)  # a reader in no hurry
        stream.close()

    reader = threading.Thread(target=slow_reader, daemon=True)
    reader.start()
    assert first.wait(5), "the probe's stream did not start"
    other = ask(client, "raw/probed", max_tokens=10)
    assert not isinstance(other, openai.APIStatusError), other.message


def spec(alias: str = "m") -> ModelSpec:
    return ModelSpec(alias, "openai", "m-test", base_url="http://127.0.0.1:1/v1")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_probe_that_has_not_answered_by_its_deadline_is_a_failure() -> None:
    """A probe that never answers (a model that takes the request and hangs, a local
    model that no timeout interrupts) used to keep the model cooling for good; past its
    deadline it counts as failed: the model cools again, then another request probes."""
    clock = Clock()
    cooldowns = Cooldowns(clock)
    model = spec()
    assert cooldowns.failed(model, "ProviderDown", allowed_fails=0, cooldown=3)
    clock.now += 3.1
    assert cooldowns.admit(model, deadline=5) == "probe"
    clock.now += 1
    assert cooldowns.admit(model, deadline=5) == "cooling"  # the probe is under way
    assert cooldowns.remaining(model)[0] == pytest.approx(4.0)  # its deadline
    clock.now += 4.5  # past the deadline: failed; cooled again from then
    assert cooldowns.admit(model, deadline=5) == "cooling"
    assert cooldowns.remaining(model)[0] == pytest.approx(2.5)
    clock.now += 3
    assert cooldowns.admit(model, deadline=5) == "probe"
    assert cooldowns.succeeded(model)  # it answered: the cooldown is over
    assert cooldowns.admit(model, deadline=5) == "ok"
