"""Jobs in their conversation: the agent delegates a job in a chat session (its model, the
loopback OpenAI replay server, calls ``delegate_job``), the job records who asked, the
session and the room, and a real ``heron serve`` streams it live to that session's
``/jobs/stream?session=S`` and the room's ``?room=R``, and filters ``jobs.list``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.agent import Turn
from heron.jobs import Jobs
from heron.settings import Settings
from heron.wiring import open_agent
from tests import llm_servers
from tests.jobs.conftest import Server
from tests.llm_servers import KEY, ONE_MODEL, ChatServer, serve

ASK = "Hand this to a background job: check whether main builds, the tests must pass"


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """The replay server, its model calling ``delegate_job`` when it is offered and the
    conversation has no tool result yet (as a model given that request does)."""
    answer = llm_servers._answer

    def delegating(body: dict[str, Any], openai: bool) -> tuple[str, list[tuple[str, str, Any]]]:
        offered = {t["function"]["name"] for t in body.get("tools") or []}
        answered = any(m["role"] == "tool" for m in body["messages"])
        if "delegate_job" in offered and not answered:
            arguments = {"prompt": "check whether main builds", "success_criteria": "tests pass"}
            return "", [("call_1", "delegate_job", arguments)]
        return answer(body, openai)

    monkeypatch.setattr(llm_servers, "_answer", delegating)
    monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
    with serve() as server:
        yield server


def stream_jobs(server: Server, query: str, until: Callable[[dict], bool]) -> list[dict]:
    """The ``job`` events of ``/jobs/stream?QUERY`` until one satisfies ``until``."""
    seen, fields = [], {}
    with httpx.stream("GET", f"{server.url}/jobs/stream?{query}", timeout=30) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            if fields.get("event") == "job":
                seen.append(json.loads(fields["data"]))
                if until(seen[-1]):
                    return seen
            fields = {}
    raise AssertionError(f"the stream ended before the condition held: {seen}")


def test_a_job_delegated_in_a_chat_session_reaches_its_session_and_room(
    jobs: Jobs, chat: ChatServer, tmp_path: Path, serve: Callable[[], Server]
) -> None:
    models = tmp_path / "models.yml"
    models.write_text(ONE_MODEL.format(url=chat.url))
    settings = Settings(llm={"models_file": models, "retries": 0}, agent={"tool_safety": "execute"})
    agent = open_agent(settings)
    try:
        answer = agent.ask(Turn(ASK, user="ana", answer="generative"))
    finally:
        agent.close()
    (use,) = [u for u in answer.tools if u.name == "delegate_job"]
    assert use.ok, use.error
    assert use.result["session_id"] == answer.session_id and use.result["room"] == "default"
    (job,) = jobs.list(session_id=answer.session_id)
    assert (job.created_by, job.room, job.state) == ("ana", "default", "queued")
    assert jobs.list(session_id="another-session") == []
    created = jobs.events(job.id)[0].payload
    assert created["by"] == "ana" and created["session_id"] == answer.session_id

    server = serve()  # its workers run the job; its streams show it
    by_session = stream_jobs(
        server, f"session={answer.session_id}", lambda d: d["job"]["state"] == "completed"
    )
    assert {d["job"]["id"] for d in by_session} == {job.id}
    steps = [e["payload"].get("step") for d in by_session for e in d["events"]]
    assert {"git_status", "git_diff", "test"} <= set(steps)
    assert by_session[-1]["job"]["result"]["ok"] is True
    seqs = [e["seq"] for d in by_session for e in d["events"]]
    assert seqs == list(range(1, len(seqs) + 1))  # every event once, in order
    by_room = stream_jobs(server, "room=default", lambda d: d["job"]["id"] == job.id)
    assert by_room[-1]["job"]["state"] == "completed"  # a new reader gets the job whole
    assert [j["id"] for j in server.result("jobs.list", session_id=answer.session_id)] == [job.id]  # type: ignore[index]
    assert server.result("jobs.list", room="elsewhere") == []
    bad = httpx.get(f"{server.url}/jobs/stream?room=", timeout=10)
    assert bad.status_code == 400


def test_a_job_delegated_through_agent_chat_records_the_turn_s_room(
    jobs: Jobs,
    chat: ChatServer,
    tmp_path: Path,
    serve: Callable[[], Server],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    models = tmp_path / "models.yml"
    models.write_text(ONE_MODEL.format(url=chat.url))
    for name, value in [("MODELS_FILE", str(models)), ("AGENT_TOOL_SAFETY", "execute")]:
        monkeypatch.setenv(f"HERON_{name}", value)
    server = serve()
    asked = {"message": ASK, "user": "ana", "answer": "generative"}
    answer: Any = server.result("agent.chat", **asked, room=" ops ")
    (use,) = [u for u in answer["tools"] if u["name"] == "delegate_job"]
    assert use["ok"] and use["result"]["room"] == "ops", use
    (job,) = jobs.list(room="ops")
    assert (job.session_id, job.created_by) == (answer["session_id"], "ana")
    assert jobs.list(room="default") == []
    # A room no stream could name is refused before any model call, saying why.
    bad = server.rpc("agent.chat", **asked, room="two words")["error"]
    assert bad["code"] == -32001 and "room" in bad["message"], bad
    empty = server.rpc("agent.chat", **asked, room="")["error"]
    assert empty["code"] == -32602, empty
    # One turn's model calls (the delegation, then the answer); none for the refused ones
    # (the job's summary, written by the server's worker, asks the model too).
    turns = [b for b in chat.posted("/v1/chat/completions") if ASK in json.dumps(b["messages"])]
    assert len(turns) == 2
