"""Delegation as its own permission, end to end on a real server (uvicorn on loopback) and
the loopback OpenAI replay model: with ``HERON_AGENT_DELEGATE`` and the agent's tools at
``read``, a conversation's turn delegates a job (and is offered no execute tool); the job
runs, streams on the conversation's ``/jobs/stream``, and its verdict is in the next
turn's context, as the ``delegate_job`` call's result; the same in a non-default context,
whose jobs stay its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.server import create_app
from heron.settings import Settings
from tests.jobs.conftest import git
from tests.jobs.test_conversation import ASK, chat  # noqa: F401 (the delegating replay model)
from tests.llm_servers import ONE_MODEL, ChatServer
from tests.server.conftest import running

EXECUTE_TOOLS = {"run_command", "python_exec", "write_file"}


def repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('hi')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def server(
    configured: Path,
    chat: ChatServer,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[str]:
    models = tmp_path / "models.yml"
    models.write_text(ONE_MODEL.format(url=chat.url))
    monkeypatch.setenv("HERON_MODELS_FILE", str(models))
    monkeypatch.setenv("HERON_AGENT_DELEGATE", "true")  # the tools stay at read
    monkeypatch.setenv("HERON_TOOLS_PYTHON_EXEC", "true")
    kube = repo(tmp_path / "ws-kube")
    settings = Settings(contexts={"kube": {"workspace": str(kube)}}, llm={"retries": 0})
    assert settings.agent.tool_safety == "read"
    with running(create_app(settings)) as (url, _):
        yield url


def follow(url: str, session: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """The conversation's ``job`` events until its job has ended."""
    seen, fields = [], {}
    stream = f"{url}/jobs/stream?session={session}"
    with httpx.stream("GET", stream, headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            if fields.get("event") == "job":
                seen.append(json.loads(fields["data"]))
                if seen[-1]["job"]["state"] in ("completed", "failed", "aborted"):
                    return seen
            fields = {}
    raise AssertionError(f"the stream ended before the job did: {seen}")


def chat_stream(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The ``final`` answer of ``POST /chat/stream``."""
    fields: dict[str, str] = {}
    with httpx.stream("POST", f"{url}/chat/stream", json=body, headers=headers, timeout=60) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            if fields.get("event") == "final":
                return json.loads(fields["data"])
            assert fields.get("event") != "error", fields
            fields = {}
    raise AssertionError("no final event")


@pytest.mark.parametrize("context", [None, "kube"])
def test_a_job_delegated_with_read_tools_runs_streams_and_is_remembered(
    server: str,
    chat: ChatServer,  # noqa: F811
    context: str | None,
) -> None:
    headers = {} if context is None else {"X-Heron-Context": context}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "agent.chat"}
    params = {"message": ASK, "user": "ana", "answer": "generative"}
    reply = httpx.post(f"{server}/rpc", json=rpc | {"params": params}, headers=headers, timeout=60)
    answer = reply.json()["result"]
    (use,) = [u for u in answer["tools"] if u["name"] == "delegate_job"]
    assert use["ok"], use
    first = next(b for b in chat.posted("/v1/chat/completions") if ASK in json.dumps(b))
    offered = {t["function"]["name"] for t in first.get("tools") or []}
    assert "delegate_job" in offered and not offered & EXECUTE_TOOLS, offered

    session = answer["session_id"]
    events = follow(server, session, headers)
    job = events[-1]["job"]
    assert job["id"] == use["result"]["id"] and job["state"] == "completed", job
    assert job["context"] == (context or "default")
    assert job["requires_confirmation"] is False  # read_only: it runs unconfirmed
    steps = {e["payload"].get("step") for d in events for e in d["events"]}
    assert {"git_status", "git_diff", "test"} <= steps
    summary = job["result"]["summary"]

    asked = len(chat.posted("/v1/chat/completions"))
    question = {"message": "What did the check find?", "session_id": session}
    final = chat_stream(server, question | {"answer": "generative"}, headers)
    assert final["answer"]
    later = chat.posted("/v1/chat/completions")[asked:]
    # The answer's call (a follow-up's rewrite call, first, sends the turns' text alone).
    sent = [b for b in later if "What did the check find?" in json.dumps(b)][-1]
    results = [m for m in sent["messages"] if m["role"] == "tool"]
    (verdict,) = [json.loads(m["content"]) for m in results if job["id"] in m["content"]]
    assert verdict["state"] == "completed" and verdict["summary"] == summary
    assert verdict["ok"] == job["result"]["ok"]
    calls = [m for m in sent["messages"] if m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["id"] == results[0]["tool_call_id"]
    # Another context's conversation sees neither the job nor its verdict.
    other = {"X-Heron-Context": "kube"} if context is None else {}
    listed = httpx.post(
        f"{server}/rpc",
        json=rpc | {"method": "jobs.list", "params": {"session_id": session}},
        headers=other,
        timeout=30,
    ).json()["result"]
    assert listed == []
