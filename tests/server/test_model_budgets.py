"""Models per key and per context, and budgets in money (issue 50), on a real server on
loopback whose models are the replay of OpenAI's wire format (``tests/llm_servers.py``),
driven by the real ``openai`` SDK: a model a key or context may not call is a 403 naming
it, a fallback outside the list is never called, a budget over is a 429 of type
``budget_exceeded`` naming the budget and its reset, parallel calls never spend past a
budget, a model over its own budget gives way to its fallback, and the spend is in
``/metrics``, ``keys.usage`` and ``keys.spend``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from heron.core.chat import ChatRequest, Message
from heron.keys import open_keys
from heron.llm.payload import estimate_tokens
from heron.server import create_app
from heron.settings import Settings
from tests.llm_servers import ChatServer
from tests.run_heron import run_heron
from tests.server.conftest import Served, running

#: $0.001 a token in, $0.002 out.
PRICED = """    provider: openai
    base_url: {url}/v1
    api_key_env: TEST_OPENAI_KEY
    input_cost_per_token: 0.001
    output_cost_per_token: 0.002
"""
MODELS = "default: gpt\nmodels:\n" + "".join(
    f"  {alias}:\n    model: {alias}-test\n{PRICED}{extra}"
    for alias, extra in (
        ("gpt", "    fallbacks: [other]\n"),
        ("gpt-mini", ""),
        ("other", ""),
        ("capped", "    max_budget: {capped}\n    budget_duration: 1d\n    fallbacks: [gpt]\n"),
    )
)
HELLO = [{"role": "user", "content": "hello there"}]
#: What Heron holds for HELLO's prompt (its estimate, on the long side), and what a call
#: of it with max_tokens 5 costs when the provider counts as much: what it holds.
PROMPT = estimate_tokens(ChatRequest((Message("user", "hello there"),)))
COST = PROMPT * 0.001 + 5 * 0.002


@pytest.fixture(scope="module")
def served(heron_home: Path, replay: ChatServer, tmp_path_factory: pytest.TempPathFactory):
    models = tmp_path_factory.mktemp("budgets") / "models.yml"
    models.write_text(MODELS.format(url=replay.url, capped=1.5 * COST))
    contexts = {"ops": {"models": ["gpt-*", "capped"], "max_budget": 2.5 * COST}}
    settings = Settings(llm={"models_file": models, "retries": 0}, contexts=contexts)
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


@pytest.fixture
def chat(replay: ChatServer) -> Iterator[ChatServer]:
    replay.requests.clear()
    replay.usage = (PROMPT, 5)  # what the provider counts: never more than was held
    yield replay
    replay.failures.clear()
    replay.usage = (11, 7)


def make_key(served: Served, name: str, **options: Any) -> str:
    with open_keys(served.settings) as keys:
        return keys.create(name, ("chat", "read"), **options)[1]


def sdk(served: Served, token: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{served.url}/v1", api_key=token, max_retries=0, default_headers=headers
    )


def ask(client: openai.OpenAI, model: str) -> Any:
    return client.chat.completions.create(model=model, messages=HELLO, max_tokens=5)


def models_called(chat: ChatServer) -> list[str]:
    return [body["model"] for body in chat.posted("/v1/chat/completions")]


def test_a_key_calls_only_its_models_and_its_fallbacks_stay_inside(
    served: Served, chat: ChatServer
) -> None:
    client = sdk(served, make_key(served, "team-a", models=["gpt*"]))
    assert ask(client, "raw/gpt-mini").model == "raw/gpt-mini"  # a wildcard
    with pytest.raises(openai.PermissionDeniedError) as refused:
        ask(client, "raw/other")
    error = refused.value.body
    assert error["type"] == "permission_error" and error["code"] == "ModelNotAllowed"
    assert (
        "the key 'team-a' may not call the model 'other'; it may call: gpt*" in (error["message"])
    )
    listed = [m.id for m in client.models.list()]  # only what it may call
    assert listed == ["gpt", "gpt-mini", "raw/gpt", "raw/gpt-mini"]
    chat.fail("gpt-test", 500)  # gpt fails; its fallback, other, is not the key's
    with pytest.raises(openai.InternalServerError):
        ask(client, "raw/gpt")
    assert "other-test" not in models_called(chat)


def test_a_context_has_its_models_and_budget_without_a_key(
    served: Served, chat: ChatServer
) -> None:
    ops = sdk(served, "unused", **{"X-Heron-Context": "ops"})
    with pytest.raises(openai.PermissionDeniedError, match="the context 'ops' may not call"):
        ask(ops, "raw/other")
    ask(ops, "raw/gpt-mini")
    ask(ops, "raw/gpt-mini")  # what is left cannot pay for another call
    with pytest.raises(openai.RateLimitError) as over:
        ask(ops, "raw/gpt-mini")
    body = over.value.body
    assert body["type"] == "budget_exceeded"
    assert (
        f"the context ops has spent ${2 * COST:.6f} of its budget of ${2.5 * COST:g}"
        in (body["message"])
    )
    assert "it never resets (no budget_duration)" in body["message"]
    assert ask(sdk(served, "unused"), "raw/other").model == "raw/other"  # default: no rule


def test_a_key_over_its_budget_is_told_which_and_when_it_resets(
    served: Served, chat: ChatServer
) -> None:
    client = sdk(served, make_key(served, "small", max_budget=2.5 * COST, budget_duration="1d"))
    ask(client, "raw/gpt")
    ask(client, "raw/gpt")
    with pytest.raises(openai.RateLimitError) as over:
        ask(client, "raw/gpt")
    response = over.value.response
    message = over.value.body["message"]
    assert f"the key small has spent ${2 * COST:.6f} of its budget of ${2.5 * COST:g} per 1d" in (
        message
    )
    assert "it resets at " in message and "T00:00:00Z" in message
    assert 1 <= int(response.headers["retry-after"]) <= 86400
    assert len(models_called(chat)) == 2  # the third was never sent


def test_parallel_calls_never_take_a_budget_past_its_limit(
    served: Served, chat: ChatServer
) -> None:
    """20 calls at once against a budget of 5.5 calls: at most 5 may be served."""
    client = sdk(served, make_key(served, "burst", max_budget=5.5 * COST))

    def one(_: int) -> str:
        try:
            ask(client, "raw/gpt")
        except openai.RateLimitError as exc:
            assert exc.body["type"] == "budget_exceeded"
            return "refused"
        return "served"

    with ThreadPoolExecutor(20) as pool:
        outcomes = list(pool.map(one, range(20)))
    served_ = outcomes.count("served")
    assert 1 <= served_ <= 5 and outcomes.count("refused") == 20 - served_
    assert len(models_called(chat)) == served_
    with open_keys(served.settings) as keys:
        spent = sum(cost for payer, _, cost in keys.spend() if payer == "key:burst")
    assert spent <= 5.5 * COST and spent == pytest.approx(served_ * COST)


def test_a_model_over_its_own_budget_gives_way_to_its_fallback(
    served: Served, chat: ChatServer
) -> None:
    client = sdk(served, make_key(served, "capper"))
    assert ask(client, "raw/capped").model == "raw/capped"  # 1 of its 1.5 calls
    assert ask(client, "raw/capped").model == "raw/gpt"  # no room: the fallback answers
    assert models_called(chat) == ["capped-test", "gpt-test"]


def test_spend_per_key_context_and_model_is_reported(served: Served, chat: ChatServer) -> None:
    ask(sdk(served, make_key(served, "reporter")), "raw/gpt-mini")
    with served.client() as client:
        metrics = client.get("/metrics").text
    sample = 'heron_spend_dollars_total{context="default",key="reporter",model="gpt-mini"}'
    assert f"{sample} {COST}" in metrics
    usage = {u["name"]: u for u in served.rpc("keys.usage")["result"]}
    assert usage["reporter"]["spend"] == pytest.approx(COST)
    rows = served.rpc("keys.spend")["result"]
    kinds = {(r["kind"], r["name"]) for r in rows if r["model"] == "gpt-mini"}
    assert {("key", "reporter"), ("context", "default"), ("model", "gpt-mini")} <= kinds


def test_the_cli_makes_keys_with_models_and_budgets_and_shows_spend(
    served: Served, chat: ChatServer
) -> None:
    made = json.loads(
        run_heron(
            "keys", "create", "cli-team", "--scope", "chat", "--models", "gpt-*,capped",
            "--max-budget", "2.5", "--budget-duration", "1mo", "--no-cache", "--json",
        ).stdout
    )  # fmt: skip
    assert (made["models"], made["max_budget"], made["budget_duration"], made["no_cache"]) == (
        ["gpt-*", "capped"], 2.5, "1mo", True,
    )  # fmt: skip
    ask(sdk(served, made["token"]), "raw/gpt-mini")
    rows = json.loads(run_heron("keys", "spend", "--json").stdout)
    assert {"kind": "key", "name": "cli-team", "model": "gpt-mini", "spend": round(COST, 6)} in rows
    refused = run_heron(
        "keys", "create", "bad", "--scope", "chat", "--budget-duration", "3w", ok=False
    )
    assert refused.returncode != 0 and "Invalid budget duration '3w'" in refused.stderr
