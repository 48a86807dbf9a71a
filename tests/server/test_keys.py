"""Named API keys on a real app (``heron.server.features.keys``): scopes per method and route, 429
with ``Retry-After`` over a limit, revocation, usage per key; ``HERON_API_TOKEN`` stays an
admin key. In-process (Starlette's TestClient), without the lifespan: nothing here needs
the store or a model, so each app is built in milliseconds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from heron.keys import SCOPES, Key, OverLimit, open_keys, seconds_to_next_month
from heron.server import create_app
from heron.server.doors.rpc import FORBIDDEN, RATE_LIMITED
from heron.server.features.keys import KeyMiddleware, Keyring, Tab, rule_for
from heron.server.features.metrics import Metrics
from heron.settings import Settings
from tests.server.conftest import Served

TOKEN = "admin-token-for-the-keys-tests-0123456789"
JOB = {"prompt": "is main green?", "risk_level": "read_only"}


@pytest.fixture
def settings(home: Path, tmp_path: Path) -> Settings:
    # A one-second window: a limit's reset is a short wait, not a minute's. A workspace:
    # jobs are created in one.
    return Settings(server={"api_token": TOKEN, "keys_window": 1}, tools={"root": tmp_path})


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings)
    yield TestClient(app, raise_server_exceptions=False)  # no lifespan: no store opened
    app.state.runtime.shared("keys", lambda: None).close()
    app.state.runtime.close()


def make_key(settings: Settings, name: str, *scopes: str, **limits: Any) -> str:
    with open_keys(settings) as keys:
        return keys.create(name, scopes, **limits)[1]


def rpc(client: TestClient, token: str, method: str, params: Any = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return client.post("/rpc", json=body, headers={"authorization": f"Bearer {token}"})


def test_a_key_without_jobs_cannot_create_a_job(settings: Settings, client: TestClient) -> None:
    reader = make_key(settings, "reader", "read")
    worker = make_key(settings, "worker", "jobs")
    refused = rpc(client, reader, "jobs.create", JOB)
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == FORBIDDEN == -32010
    assert error["message"].startswith("forbidden: needs scope jobs")
    assert error["data"]["scope"] == "jobs"
    created = rpc(client, worker, "jobs.create", JOB)
    assert created.status_code == 200, created.text
    assert created.json()["result"]["state"] == "queued"
    # The reader read nothing it may not: jobs.list is jobs too.
    assert rpc(client, reader, "jobs.list").json()["error"]["code"] == FORBIDDEN


def test_routes_need_their_scope_in_openais_shape(settings: Settings, client: TestClient) -> None:
    reader = make_key(settings, "reader", "read")
    headers = {"authorization": f"Bearer {reader}"}
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = client.post("/v1/chat/completions", json=chat, headers=headers)
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["type"] == "permission_error" and "needs scope chat" in error["message"]
    # A route listed nowhere needs admin (secure by default): /doctor.
    assert client.get("/doctor", headers=headers).status_code == 403
    assert "needs scope admin" in client.get("/doctor", headers=headers).json()["error"]["message"]


def test_over_requests_per_minute_is_429_with_retry_after_then_succeeds(
    settings: Settings, client: TestClient
) -> None:
    token = make_key(settings, "ci", "jobs", rpm=2)
    assert rpc(client, token, "jobs.list").status_code == 200
    assert rpc(client, token, "jobs.list").status_code == 200
    limited = rpc(client, token, "jobs.list")
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "1"
    error = limited.json()["error"]
    assert error["code"] == RATE_LIMITED == -32029
    assert error["data"]["retry_after"] == 1 and "2 requests per 1 s" in error["message"]
    time.sleep(1.05)
    again = rpc(client, token, "jobs.list")
    assert again.status_code == 200 and "result" in again.json()


def test_a_batch_counts_each_call(settings: Settings, client: TestClient) -> None:
    token = make_key(settings, "batch", "jobs", rpm=2)
    calls = [{"jsonrpc": "2.0", "id": i, "method": "jobs.list"} for i in range(3)]
    answers = client.post("/rpc", json=calls, headers={"authorization": f"Bearer {token}"})
    assert answers.status_code == 200  # a batch answers each call in its own object
    codes = sorted(a.get("error", {}).get("code", 0) for a in answers.json())
    assert codes == [RATE_LIMITED, 0, 0]


def test_a_route_over_its_limit_is_429_in_openais_shape(
    settings: Settings, client: TestClient
) -> None:
    token = make_key(settings, "reader", "read", rpm=1)
    headers = {"authorization": f"Bearer {token}"}
    assert client.get("/v1/models", headers=headers).status_code == 200
    limited = client.get("/v1/models", headers=headers)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    assert limited.json()["error"]["type"] == "rate_limit_error"


def test_revoked_and_unknown_keys_get_401(settings: Settings, client: TestClient) -> None:
    token = make_key(settings, "gone", "admin")
    assert rpc(client, token, "library.list").status_code == 200
    with open_keys(settings) as keys:
        keys.revoke("gone")
    revoked = rpc(client, token, "library.list")
    assert revoked.status_code == 401 and "'gone' was revoked" in revoked.text
    forged = rpc(client, "hk_" + "A" * 43, "library.list")
    assert forged.status_code == 401 and "Unknown API key" in forged.text


def test_the_api_token_still_works_for_everything(settings: Settings, client: TestClient) -> None:
    for method, params in [("jobs.create", JOB), ("keys.list", {}), ("library.list", {})]:
        answer = rpc(client, TOKEN, method, params)
        assert answer.status_code == 200 and "result" in answer.json(), (method, answer.text)
    made = rpc(client, TOKEN, "keys.create", {"name": "via-api", "scopes": ["read"]})
    token = made.json()["result"]["token"]
    assert rpc(client, token, "library.list").status_code == 200
    assert rpc(client, token, "keys.list").json()["error"]["data"]["scope"] == "admin"
    assert rpc(client, "wrong", "library.list").status_code == 401


def test_usage_per_key_is_in_metrics(settings: Settings, client: TestClient) -> None:
    token = make_key(settings, "counted", "read", "jobs")
    for _ in range(3):
        rpc(client, token, "jobs.list")
    rpc(client, token, "keys.list")  # forbidden
    text = client.get("/metrics", headers={"authorization": f"Bearer {token}"}).text
    assert 'heron_key_requests_total{key="counted",outcome="ok"} 4.0' in text  # and /metrics
    assert 'heron_key_requests_total{key="counted",outcome="forbidden"} 1.0' in text
    usage = rpc(client, TOKEN, "keys.usage").json()["result"]
    assert {"name": "counted", "requests": 4} in [
        {"name": u["name"], "requests": u["requests"]} for u in usage
    ]


def test_every_method_names_a_known_scope(settings: Settings) -> None:
    registry = create_app(settings).state.registry
    scopes = {m.name: m.scope for m in registry.methods.values()}
    assert set(scopes.values()) <= set(SCOPES)
    assert scopes["agent.chat"] == "chat" and scopes["search.query"] == "read"
    assert scopes["tools.call"] == "tools" and scopes["library.add"] == "admin"
    assert all(s == "jobs" for n, s in scopes.items() if n.startswith("jobs."))
    assert all(s == "admin" for n, s in scopes.items() if n.startswith("keys."))


def test_the_key_is_on_request_state_with_its_context(settings: Settings) -> None:
    async def whoami(request: Request) -> JSONResponse:
        key = request.state.key
        return JSONResponse(None if key is None else {"name": key.name, "context": key.context})

    ring = Keyring(settings, Metrics())
    token = make_key(settings, "bound", "read", context="geomind")
    app = Starlette(routes=[Route("/", whoami)])
    with TestClient(KeyMiddleware(app, ring=ring, token=TOKEN)) as keyed:
        bound = keyed.get("/", headers={"authorization": f"Bearer {token}"}).json()
        assert bound == {"name": "bound", "context": "geomind"}
        # Past TokenMiddleware without a named key: the request carried HERON_API_TOKEN.
        assert keyed.get("/").json() == {"name": "HERON_API_TOKEN", "context": None}
    with TestClient(KeyMiddleware(app, ring=ring, token=None)) as open_server:
        assert open_server.get("/").json() is None  # a loopback server without a token
    ring.close()


def test_token_limits_are_charged_after_and_checked_before(settings: Settings) -> None:
    ring = Keyring(settings, Metrics())
    key = Key("llm", frozenset({"chat"}), tpm=10)
    ring.admit(key, metered=True)
    ring.spend(key, 8, 7)  # the answer that crosses the limit finishes
    with pytest.raises(OverLimit) as over:
        ring.admit(key, metered=True)
    assert over.value.retry_after == 1 and "10 tokens per 1 s" in str(over.value)
    ring.admit(key, metered=False)  # a search spends no tokens: still allowed
    time.sleep(1.05)
    ring.admit(key, metered=True)
    ring.close()


def test_tokens_are_held_before_they_are_spent(settings: Settings) -> None:
    """The token reservation rule at the keyring: what requests under way hold counts
    against every one after them, a refusal holds nothing, and what is held unspent
    goes back when the work ends."""
    ring = Keyring(settings, Metrics())
    key = Key("held", frozenset({"chat"}), tpm=100)
    first = Tab(ring, key)
    assert first.need(60) == 60
    second = Tab(ring, key)
    with pytest.raises(OverLimit) as short:
        second.need(60)  # 40 left: the first holds the rest
    assert short.value.retry_after == 1  # what is held comes back when the first ends
    assert "up to 60 tokens" in str(short.value) and "has 40 left" in str(short.value)
    assert second.held == 0
    first.spent(20, 10)  # a model call of the first: charged out of what it held
    first.charge(20, 25)  # the door's count of the whole answer: only the 15 more
    first.close()  # 15 unspent go back
    assert ring.month_tokens(key) == 45
    assert second.need(55) == 55  # 100 - 45 spent
    with pytest.raises(OverLimit) as whole:
        Tab(ring, key).need(500)
    assert "more than the key 'held' has in all" in str(whole.value)
    second.close()
    ring.close()


def test_the_monthly_budget_outlives_the_server(settings: Settings) -> None:
    make_key(settings, "budget", "chat", monthly_tokens=100)
    with open_keys(settings) as keys:
        key = keys.get("budget")
    first = Keyring(settings, Metrics())
    first.admit(key, metered=True)
    first.spend(key, 60, 50)
    first.close()  # writes the usage
    second = Keyring(settings, Metrics())  # a restarted server
    with pytest.raises(OverLimit) as over:
        second.admit(key, metered=True)
    assert abs(over.value.retry_after - seconds_to_next_month()) <= 2
    assert [(u.name, u.tokens_in, u.tokens_out) for u in second.usage()] == [("budget", 60, 50)]
    second.close()


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("GET", "/", "read"),
        ("GET", "/jobs", "read"),
        ("GET", "/jobs/9f3c/events/stream", "jobs"),
        ("POST", "/chat/stream", "chat"),
        ("POST", "/interventions/3/outcome", "chat"),
        ("GET", "/v1/models/raw/local", "read"),
        ("GET", "/doctor", "admin"),
        ("POST", "/watchdog/heartbeat/backup", "admin"),
        ("GET", "/libraries/extra", "admin"),
        ("POST", "/metrics", "admin"),
    ],
)
def test_each_route_needs_its_scope(method: str, path: str, scope: str) -> None:
    rule = rule_for(method, path)
    assert (rule.scope if rule else "admin") == scope


def test_mcp_offers_and_runs_only_the_tools_a_key_may_call(served: Served) -> None:
    """Over the real SDK client: a read key is offered no ``find_tools`` and no jobs, and
    gets a tool error naming the scope when it calls one anyway; its searches run."""
    with open_keys(served.settings) as keys:
        token = keys.create("mcp-reader", ["read"])[1]

    async def session() -> tuple[list[str], Any, Any, Any]:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60)
        async with http, Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as c:
            listed = await c.list_tools()
            found = await c.call_tool("find_tools", {"query": "read a skill"})
            jobs = await c.call_tool("jobs_list", {})
            skills = await c.call_tool("search_skills", {"query": "roll back", "top_k": 1})
        return sorted(t.name for t in listed.tools), found, jobs, skills

    names, found, jobs, skills = anyio.run(session)
    assert names == ["interventions_list", "read_skill", "search_docs", "search_skills"]
    assert found.is_error and "needs scope tools" in found.content[0].text
    assert jobs.is_error and "needs scope jobs" in jobs.content[0].text
    assert not skills.is_error


def test_a_chat_answer_is_charged_to_its_key(served: Served) -> None:
    """An answer's usage lands on the key that asked, and a key whose window has no
    room left for what the next chat may spend (its message and Heron's answer budget,
    35 tokens here) is refused it (429), not the next search."""
    with open_keys(served.settings) as keys:
        token = keys.create("chatter", ["chat", "read"], tpm=40)[1]
    headers = {"authorization": f"Bearer {token}"}
    chat = {
        "model": "local",
        "messages": [{"role": "user", "content": "How do I undo a rollout?"}],
        "answer": "extractive",  # no model call: quoted passages, usage still counted
    }
    with served.client(headers=headers) as client:
        answered = client.post("/v1/chat/completions", json=chat)
        assert answered.status_code == 200, answered.text
        used = answered.json()["usage"]
        assert used["prompt_tokens"] > 0
        limited = client.post("/v1/chat/completions", json=chat)
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert client.get("/v1/models").status_code == 200
        metrics = client.get("/metrics").text
    line = f'heron_key_tokens_total{{direction="in",key="chatter"}} {float(used["prompt_tokens"])}'
    assert line in metrics
