"""Deployments of one model as a pool (issue 50): each routing strategy against the
loopback replay of OpenAI's wire format (deployments that answer at different speeds,
one that fails), per-deployment rpm and cooldowns, and several keys per provider turned
on 401 and 429."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from heron.core.chat import ChatRequest, Done, Message
from heron.llm import Broker, parse_table
from heron.llm.cooldowns import Cooldowns
from heron.llm.errors import CoolingDown
from heron.llm.routing import Deployments
from heron.settings import Settings
from tests.llm_servers import KEY, ChatServer
from tests.run_heron import run_heron

DEPLOYMENT = """  {alias}:
    provider: openai
    model: {model}
    base_url: {url}/v1
    api_key_env: {keys}
{extra}"""
PING = ChatRequest((Message("user", "ping"),), max_tokens=4)


def broker(chat: ChatServer, pool: str, *members: tuple[str, str], **options: Any) -> Broker:
    """A broker whose ``fast`` is a pool of ``members`` (alias, extra lines), each its
    own model name on the replay server, ``pool`` the pool's own lines."""
    text = f"models:\n  fast:\n    deployments: [{', '.join(a for a, _ in members)}]\n{pool}"
    for alias, extra in members:
        text += DEPLOYMENT.format(
            alias=alias, model=f"{alias}-test", url=chat.url, keys="TEST_OPENAI_KEY", extra=extra
        )
    llm = {"retries": 0, "backoff": 0.01, "max_wait": 0.3} | options.pop("llm", {})
    settings = Settings(llm=llm, **options)
    made = Broker(parse_table(text), settings, cooldowns=Cooldowns())
    made.deployments = Deployments(rng=random.Random(7))
    return made


def answered(made: Broker, calls: int) -> Counter[str]:
    return Counter(made.complete(PING, model="fast").model for _ in range(calls))


def test_simple_shuffle_draws_by_rpm_and_skips_a_failing_deployment(chat: ChatServer) -> None:
    made = broker(
        chat,
        "",
        ("big", "    rpm: 900\n"),
        ("small", "    rpm: 100\n"),
        ("broken", "    rpm: 900\n"),
    )
    chat.fail("broken-test", 500, times=1000)
    counts = answered(made, 60)
    assert counts["broken"] == 0  # its failures fell back to the others, then it cooled
    assert counts["big"] > 3 * counts["small"] > 0, counts
    assert made.cooldowns.remaining(made.table.spec("broken"))[0] > 0
    tried = Counter(body["model"] for body in chat.posted("/v1/chat/completions"))
    assert tried["broken-test"] <= 4  # allowed_fails (3) and the one that cooled it


def test_latency_based_routing_prefers_the_fastest(chat: ChatServer) -> None:
    made = broker(
        chat,
        "    routing_strategy: latency-based-routing\n",
        ("quick", ""),
        ("slow", ""),
        ("slower", ""),
    )
    chat.latency = {"slow-test": 0.05, "slower-test": 0.1}
    counts = answered(made, 20)
    assert counts["quick"] >= 18, counts  # each is measured once, then the fastest wins


def test_least_busy_sends_the_next_call_to_the_idle_deployment(chat: ChatServer) -> None:
    made = broker(chat, "    routing_strategy: least-busy\n", ("one", ""), ("two", ""))
    stream = made.stream(ChatRequest((Message("user", "a long answer please"),)), model="fast")
    first = next(stream)  # a stream under way: its deployment is busy
    busy = chat.posted("/v1/chat/completions")[-1]["model"]
    other = made.complete(PING, model="fast").model
    assert f"{other}-test" != busy
    assert first and any(isinstance(e, Done) for e in stream)
    assert made.complete(PING, model="fast").model  # both idle again: either


def test_a_deployment_at_its_rpm_is_skipped_and_a_pool_all_full_is_a_429(
    chat: ChatServer,
) -> None:
    made = broker(chat, "    routing_strategy: least-busy\n", ("one", "    rpm: 2\n"))
    assert answered(made, 2) == {"one": 2}
    with pytest.raises(CoolingDown, match=r"used its 2 rpm this minute") as full:
        made.complete(PING, model="fast")
    assert full.value.http_status == 429 and 1 <= (full.value.retry_after or 0) <= 60


def test_several_keys_turn_on_429_and_401(
    chat: ChatServer, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEY_A", "sk-limited-0000000000000000")
    monkeypatch.setenv("KEY_B", "sk-unknown-000000000000000")
    monkeypatch.setenv("KEYS_C", f"sk-wrong-00000000000000, {KEY}")  # several in one
    chat.limited_keys = {"sk-limited-0000000000000000"}
    text = "models:\n" + DEPLOYMENT.format(
        alias="gpt", model="gpt-test", url=chat.url, keys="[KEY_A, KEY_B, KEYS_C]", extra=""
    )
    made = Broker(parse_table(text), Settings(llm={"retries": 0}), cooldowns=Cooldowns())
    assert made.complete(PING).model == "gpt"
    sent = [r["headers"]["Authorization"] for r in chat.requests]
    assert sent == [
        "Bearer sk-limited-0000000000000000",  # 429: this key's limit
        "Bearer sk-unknown-000000000000000",  # 401
        "Bearer sk-wrong-00000000000000",  # 401
        f"Bearer {KEY}",
    ]
    assert made.cooldowns.remaining(made.table.spec("gpt"))[0] == 0  # the model is fine
    made.complete(PING)  # the next call starts on the key that answered
    assert chat.requests[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert len(chat.requests) == 5


def test_models_list_shows_a_pool_and_its_strategy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "models.yml").write_text(
        "model_list:\n"
        + "".join(
            f"  - model_name: fast\n    litellm_params: {{model: openai/{m}, rpm: {r}}}\n"
            for m, r in (("gpt-4o-mini", 100), ("gpt-4.1-mini", 300))
        )
        + "router_settings: {routing_strategy: least-busy}\n"
    )
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    monkeypatch.delenv("HERON_MODELS_FILE", raising=False)
    listed = json.loads(run_heron("models", "list", "--json").stdout)["models"]
    rows = {r["alias"]: r for r in listed}
    assert rows["fast"]["deployments"] == ["fast#1", "fast#2"]
    assert rows["fast"]["routing_strategy"] == "least-busy"
    assert rows["fast#2"]["rpm"] == 300
    assert rows["fast#2"]["input_cost_per_token"] == pytest.approx(0.4e-6)  # the shipped price
    shown = run_heron("models", "list").stdout
    assert "pool of fast#1, fast#2 (least-busy)" in " ".join(shown.split())
