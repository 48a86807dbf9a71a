"""Chat through every door, with the real bundled local model (answers cut short):
``agent.chat``, the OpenAI SDK against ``/v1`` (plain and streaming), and SSE with resume."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.server.conftest import MAX_TOKENS, Served

QUESTION = "How do I roll back a Deployment to its previous revision?"


def pages(citations: list[dict]) -> set[str]:
    return {c["page"] for c in citations}


@pytest.fixture(scope="module")
def client(served: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)


def test_agent_chat_over_rpc(served: Served) -> None:
    answer = served.rpc("agent.chat", {"message": QUESTION, "library": "tiny"})["result"]
    assert answer["model"] == "local"
    assert "tasks/rollback" in pages(answer["citations"])
    assert answer["usage"]["completion_tokens"] <= MAX_TOKENS * answer["steps"]
    assert answer["session_id"]


def test_models_lists_the_aliases(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["local", "raw/local"]
    assert client.models.retrieve("local").owned_by == "heron:local"
    with pytest.raises(openai.NotFoundError, match="Models: local, raw/local"):
        client.models.retrieve("gpt-9")


def test_openai_sdk_plain(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": QUESTION}], max_tokens=16
    )
    assert done.object == "chat.completion" and done.id.startswith("chatcmpl-")
    assert done.choices[0].message.role == "assistant"
    assert isinstance(done.choices[0].message.content, str)
    # max_tokens holds in every answer mode: the quoted answer, longer than 16 tokens, is cut
    # to fit and says so, as OpenAI does
    assert done.choices[0].finish_reason == "length" and done.usage.completion_tokens <= 16
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
    assert "tasks/rollback" in pages(done.model_extra["citations"])


def test_openai_sdk_streaming(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="local",
            messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
            stream=True,
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert "tasks/rollback" in pages(last.model_extra["citations"])
    assert last.usage.completion_tokens >= 1 and text.strip()


def test_openai_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="Unknown model 'gpt-9'"):
        client.chat.completions.create(
            model="gpt-9", messages=[{"role": "user", "content": QUESTION}]
        )
    with pytest.raises(openai.BadRequestError, match="No user message"):
        client.chat.completions.create(
            model="local", messages=[{"role": "system", "content": "Be brief."}]
        )


def read_events(response: httpx.Response) -> list[tuple[str, str, dict]]:
    """``(id, event, data)`` of each Server-Sent Event."""
    events, fields = [], {}
    for line in response.iter_lines():
        if not line:
            events.append((fields["id"], fields["event"], json.loads(fields["data"])))
            fields = {}
        else:
            key, _, value = line.partition(": ")
            fields[key] = value
    return events


def test_sse_stream_then_resume(served: Served) -> None:
    with served.client() as http:
        with http.stream("POST", "/chat/stream", json={"message": QUESTION}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = read_events(response)
        names = [name for _, name, _ in events]
        assert names[0] == "stream" and names[-2:] == ["citations", "final"]
        assert set(names[1:-2]) <= {"token", "tool"} and "token" in names
        sid = events[0][2]["stream_id"]
        assert [i for i, _, _ in events] == [f"{sid}:{n}" for n in range(1, len(events) + 1)]
        final = events[-1][2]
        assert "".join(d["text"] for _, n, d in events if n == "token") == final["answer"]
        # A client that saw the first two events picks up where it left off, both ways.
        headers = {"last-event-id": f"{sid}:2"}
        with http.stream("GET", f"/chat/stream/{sid}", headers=headers) as response:
            assert read_events(response) == events[2:]
        with http.stream("POST", "/chat/stream", headers=headers, json={}) as response:
            assert read_events(response) == events[2:]
        gone = http.get("/chat/stream/feed", headers={"last-event-id": "feed:1"})
        assert gone.status_code == 404 and "POST /chat/stream" in gone.json()["error"]["message"]


@pytest.mark.parametrize("mode", ["extractive", "generative"])
def test_sse_stream_takes_the_answer_mode(served: Served, mode: str) -> None:
    body = {"message": QUESTION, "library": "tiny", "answer": mode}
    with served.client() as http, http.stream("POST", "/chat/stream", json=body) as response:
        final = read_events(response)[-1][2]
    if mode == "extractive":
        assert final["mode"] == "extractive" and final["fallback"] is None
    else:  # the bundled model, cut at the fixture's 16 tokens, is quoted instead
        assert final["usage"]["completion_tokens"] > 0  # the model was asked to write
        assert final["mode"] == "generative" or final["fallback"] in {"degenerate", "echoed_prompt"}


def test_sse_bad_requests(served: Served) -> None:
    with served.client() as http:
        empty = http.post("/chat/stream", json={"message": ""})
        unknown = http.post("/chat/stream", json={"message": QUESTION, "model": "gpt-9"})
        missing = http.post("/chat/stream", json={"message": QUESTION, "library": "nope"})
    assert empty.status_code == 400 and empty.json()["error"]["param"] == "message"
    assert unknown.status_code == 400 and "Unknown model" in unknown.json()["error"]["message"]
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]


def test_two_chats_at_once(served: Served) -> None:
    # A batch runs its requests concurrently: two answers share one agent and one model.
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "agent.chat", "params": {"message": QUESTION}}
        for i in (1, 2)
    ]
    with served.client() as http:
        answers = http.post("/rpc", json=batch).json()
    assert [a["id"] for a in answers] == [1, 2]
    assert all("tasks/rollback" in pages(a["result"]["citations"]) for a in answers)
    assert answers[0]["result"]["session_id"] != answers[1]["result"]["session_id"]
