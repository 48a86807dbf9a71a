"""Conversations per person on a real server on loopback
(``heron/server/features/conversations.py``):
one CLI ask, one ``/v1`` call (the openai SDK), one MCP ask and three page conversations
(two by ana, one by bea, each with a named key, as the page makes them: ``sessions.create``
then ``/chat/stream``). Each person's page list holds exactly their own page
conversations; a key's list holds its own sessions; another's session is not there for
anyone but an admin; nothing crosses contexts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
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
from heron.settings import Settings
from tests.server.conftest import build_home, heron_env, running

QUESTION = "How do I roll back a Deployment?"
NOT_FOUND, FORBIDDEN = -32004, -32010
EXTRACTIVE = {"answer": "extractive"}  # quoted, no model call: plumbing, not prose


@dataclass
class Server:
    url: str
    env: dict[str, str]
    tokens: dict[str, str]  # a key's name -> its token

    def headers(self, who: str | None, context: str | None = None) -> dict[str, str]:
        headers = {} if who is None else {"authorization": f"Bearer {self.tokens[who]}"}
        return headers | ({} if context is None else {"x-heron-context": context})

    def call(self, who: str | None, method: str, context: str | None = None, **params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = httpx.post(f"{self.url}/rpc", json=body, headers=self.headers(who, context),
                           timeout=120)  # fmt: skip
        return reply.json()

    def result(self, who: str | None, method: str, **params: Any) -> Any:
        answer = self.call(who, method, **params)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, who: str | None, method: str, **params: Any) -> dict[str, Any]:
        answer = self.call(who, method, **params)
        assert "error" in answer, answer
        return answer["error"]

    def page_ask(self, who: str, message: str) -> str:
        """What the chat page does for a new conversation: make it as the page's, then
        stream the answer in it. Returns its id."""
        made = self.result(who, "sessions.create", door="page")["session_id"]
        body = {"message": message, "session_id": made} | EXTRACTIVE
        with httpx.stream("POST", f"{self.url}/chat/stream", json=body,
                          headers=self.headers(who), timeout=120) as reply:  # fmt: skip
            assert reply.status_code == 200, reply.read()
            final = [json.loads(line[5:]) for line in reply.iter_lines() if "session_id" in line]
        assert final[-1]["session_id"] == made, final
        return made


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("conversations")
    env = heron_env(tmp)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        for name in ("HERON_CONFIG", "HERON_API_TOKEN", "HERON_CONTEXT"):
            mp.delenv(name, raising=False)
        build_home(tmp)
        settings = Settings(contexts={"other": {}})
        with open_keys(settings) as keys:
            tokens = {
                name: keys.create(name, ["read", "chat"])[1] for name in ("ana", "bea", "app")
            }
            tokens["root"] = keys.create("root", ["admin"])[1]
        with running(create_app(settings)) as (url, _):
            yield Server(url, env, tokens)


async def mcp_ask(url: str, token: str) -> dict[str, Any]:
    client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=120)
    async with client, Client(streamable_http_client(url, http_client=client)) as mcp:
        asked = await mcp.call_tool("ask", {"message": QUESTION} | EXTRACTIVE)
    assert not asked.is_error, asked.content
    return asked.structured_content or json.loads(asked.content[0].text)


@pytest.fixture(scope="module")
def made(server: Server) -> dict[str, Any]:
    """Every door asks once, ana twice on the page, bea once: each one's session ids."""
    cli = subprocess.run(
        [sys.executable, "-m", "heron", "ask", QUESTION, "--answer", "extractive", "--json"],
        env={**os.environ, **server.env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.tokens["app"],
                           max_retries=0)  # fmt: skip
    v1 = client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": QUESTION}], extra_body=EXTRACTIVE
    )
    mcp = anyio.run(mcp_ask, f"{server.url}/mcp", server.tokens["app"])
    return {
        "cli": json.loads(cli.stdout)["session_id"],
        "v1": v1.model_extra["session_id"],  # type: ignore[index]
        "mcp": mcp["session_id"],
        "ana": [server.page_ask("ana", "What does a Pod run?"), server.page_ask("ana", QUESTION)],
        "bea": [server.page_ask("bea", "Where do I keep a password?")],
    }


def ids(listed: list[dict[str, Any]]) -> set[str]:
    return {s["id"] for s in listed}


def test_each_person_s_page_lists_exactly_their_page_conversations(
    server: Server, made: dict[str, Any]
) -> None:
    ana = server.result("ana", "sessions.list", door="page")
    assert [s["id"] for s in ana] == made["ana"][::-1]  # the latest first
    assert {(s["owner"], s["door"], s["turns"]) for s in ana} == {("ana", "page", 1)}
    assert ana[-1]["title"] == "What does a Pod run?"
    assert ids(server.result("bea", "sessions.list", door="page")) == set(made["bea"])
    # The machine's user (no key, loopback) has the CLI's, and no page conversation.
    assert ids(server.result(None, "sessions.list")) == {made["cli"]}
    assert server.result(None, "sessions.list", door="page") == []


def test_a_key_lists_its_own_sessions_whatever_the_door(
    server: Server, made: dict[str, Any]
) -> None:
    app = server.result("app", "sessions.list")
    assert ids(app) == {made["v1"], made["mcp"]}
    assert {(s["owner"], s["door"]) for s in app} == {("app", "api")}
    assert server.result("app", "sessions.list", door="page") == []
    assert ids(server.result("ana", "sessions.list")) == set(made["ana"])
    # Everyone's is an admin's to ask for: the other doors' and the CLI's included.
    refused = server.error("ana", "sessions.list", everyone=True)
    assert refused["code"] == FORBIDDEN and "admin" in refused["message"]
    everyone = server.result("root", "sessions.list", everyone=True)
    expected = {made["cli"], made["v1"], made["mcp"], *made["ana"], *made["bea"]}
    assert ids(everyone) == expected
    doors = {s["id"]: s["door"] for s in everyone}
    assert doors[made["cli"]] == "cli" and doors[made["v1"]] == doors[made["mcp"]] == "api"


def test_another_person_s_conversation_is_not_there(server: Server, made: dict[str, Any]) -> None:
    theirs = made["ana"][0]
    for method, params in (
        ("agent.history", {"session_id": theirs}),
        ("agent.chat", {"message": "mine now?", "session_id": theirs} | EXTRACTIVE),
        ("sessions.rename", {"session_id": theirs, "title": "mine now"}),
        ("sessions.delete", {"session_id": theirs}),
    ):
        error = server.error("bea", method, **params)
        assert error["code"] == NOT_FOUND and theirs in error["message"], (method, error)
    asked = {"message": "mine now?", "session_id": theirs} | EXTRACTIVE
    streamed = httpx.post(f"{server.url}/chat/stream", headers=server.headers("bea"), json=asked)
    assert streamed.status_code == 404 and theirs in streamed.text
    # Its owner and an admin still read it whole.
    assert len(server.result("ana", "agent.history", session_id=theirs)) == 1
    assert len(server.result("root", "agent.history", session_id=theirs)) == 1


def test_sessions_do_not_cross_contexts(server: Server, made: dict[str, Any]) -> None:
    elsewhere = server.call("ana", "sessions.list", context="other", door="page")
    assert elsewhere["result"] == []
    error = server.call("ana", "agent.history", context="other", session_id=made["ana"][0])
    assert error["error"]["code"] == NOT_FOUND
    assert server.call("root", "sessions.list", context="other", everyone=True)["result"] == []
