"""``heron models list`` and ``check``, run as a user would, against the loopback replay."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.llm import Broker, ChatRequest, Message
from tests.llm.conftest import MODELS
from tests.llm_servers import ChatServer
from tests.run_heron import run_heron

HELLO = ChatRequest((Message("user", "hello"),))


@pytest.fixture
def models_yml(home: Path, chat: ChatServer) -> Path:
    home.mkdir(parents=True)
    path = home / "models.yml"
    path.write_text(MODELS.format(url=chat.url))
    return path


def test_list_json(models_yml: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_ANTHROPIC_KEY")
    data = json.loads(run_heron("models", "list", "--json").stdout)
    assert data["source"] == str(models_yml)
    rows = {row["alias"]: row for row in data["models"]}
    assert list(rows) == ["gpt", "claude", "other", "local"]
    assert rows["gpt"]["default"] and rows["gpt"]["fallbacks"] == ["claude"]
    assert rows["gpt"]["key_set"] is True and rows["claude"]["key_set"] is False
    assert rows["gpt"]["max_tools"] == 128 and rows["claude"]["name_profile"] == "anthropic"
    assert "claude" in run_heron("models", "list").stdout


def test_check_one_and_all(
    models_yml: Path, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (result,) = json.loads(run_heron("models", "check", "gpt", "--json").stdout)
    assert result["ok"] and result["answer"].startswith("echo:")
    monkeypatch.delenv("TEST_ANTHROPIC_KEY")
    chat.fail("other-test", 500, times=9)
    monkeypatch.setenv("HERON_LLM_RETRIES", "0")
    done = run_heron("models", "check", "claude", ok=False)
    assert done.returncode == 1 and "$TEST_ANTHROPIC_KEY is not set" in done.stdout
    results = {
        r["model"]: r
        for r in json.loads(run_heron("models", "check", "other", "--json", ok=False).stdout)
    }
    assert not results["other"]["ok"] and "server error 500" in results["other"]["error"]


def test_bad_models_yml_is_a_clean_error(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "models.yml").write_text("models:\n  a:\n    provider: gpt\n")
    done = run_heron("models", "list", ok=False)
    assert done.returncode == 1
    assert "models.yml, line 2, model 'a': unknown provider 'gpt'" in done.stderr


def test_list_shows_what_a_server_of_the_home_cools_down(
    models_yml: Path, chat: ChatServer, make_broker: Callable[..., Broker]
) -> None:
    """The broker that found gpt rate limited (a server's, here this process's) wrote it
    down; ``heron models list``, another process, shows it."""
    chat.fail("gpt-test", 429, **{"retry-after": "120"})
    assert make_broker(llm={"max_wait": 0.1}).complete(HELLO).model == "claude"
    data = json.loads(run_heron("models", "list", "--json").stdout)
    rows = {row["alias"]: row for row in data["models"]}
    assert rows["claude"]["cooldown"] is None
    cooling = rows["gpt"]["cooldown"]
    assert cooling["rate_limited"] and 100 < cooling["seconds_left"] <= 120
    assert data["policy"]["cooldown"] == 60.0
    assert "cooling" in run_heron("models", "list").stdout
