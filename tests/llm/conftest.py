"""Brokers over the loopback OpenAI/Anthropic server, with short waits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.llm import Broker, parse_table
from heron.settings import Settings
from tests.llm_servers import KEY, ONE_MODEL, ChatServer, serve

MODELS = (
    ONE_MODEL
    + """    fallbacks: [claude]
  claude:
    provider: anthropic
    model: claude-test
    base_url: {url}
    api_key_env: TEST_ANTHROPIC_KEY
  other:
    provider: openai
    model: other-test
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
"""
)


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", KEY)
    with serve() as server:
        yield server


@pytest.fixture
def make_broker(chat: ChatServer, home: Path) -> Callable[..., Broker]:
    """``make_broker(**settings)``: a broker over MODELS, retry waits in milliseconds."""

    def make(**values: Any) -> Broker:
        llm = {"backoff": 0.01, "max_wait": 0.3, "timeout": 5.0} | values.pop("llm", {})
        return Broker(parse_table(MODELS.format(url=chat.url)), Settings(llm=llm, **values))

    return make
