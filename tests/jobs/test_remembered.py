"""Results remembered on the default path (issue 49): a conversation delegates a read-only
job (its model, the loopback OpenAI replay server, calls ``delegate_job``), the job runs
on a real server (uvicorn on loopback) and ends; the next turns, through ``agent.chat`` with
no ``answer`` (the model's default: extractive, no model call), answer "what did the
check find?" from the job's verdict and cite the job, in English and in Portuguese, in the
default context and in another; a question about something else in the same
conversation still quotes the libraries."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.libraries import add_library, index_library
from heron.server import create_app
from heron.settings import Settings
from heron.store import open_store
from tests.jobs.test_conversation import ASK, chat  # noqa: F401 (the delegating replay model)
from tests.jobs.test_delegation import follow, repo
from tests.llm_servers import ONE_MODEL, ChatServer
from tests.server.conftest import running

#: The replay model, as a weak one: its answers are extractive unless a turn asks.
EXTRACTIVE_MODEL = ONE_MODEL + "    answers: extractive\n"
WATERING = (
    "# Watering tomatoes\n\nWater tomato plants deeply twice a week, at the base, early "
    "in the morning.\n"
)


@pytest.fixture
def server(
    configured: Path,
    chat: ChatServer,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[str]:
    models = tmp_path / "models.yml"
    models.write_text(EXTRACTIVE_MODEL.format(url=chat.url))
    monkeypatch.setenv("HERON_MODELS_FILE", str(models))
    monkeypatch.setenv("HERON_AGENT_DELEGATE", "true")  # the tools stay at read
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    docs = tmp_path / "garden"
    docs.mkdir()
    (docs / "watering.md").write_text(WATERING)
    add_library("garden", str(docs), Settings())
    with contextlib.closing(open_store(Settings())) as store:
        index_library("garden", store, settings=Settings())
    kube = repo(tmp_path / "ws-kube")
    settings = Settings(contexts={"kube": {"workspace": str(kube)}}, llm={"retries": 0})
    with running(create_app(settings)) as (url, _):
        yield url


def chat_turn(url: str, headers: dict[str, str], **params: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "agent.chat", "params": params}
    reply = httpx.post(f"{url}/rpc", json=body, headers=headers, timeout=60).json()
    assert "result" in reply, reply
    return reply["result"]


def delegated(url: str, headers: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """A conversation whose first turn delegated a job, and that job once it ended."""
    answer = chat_turn(url, headers, message=ASK, user="ana", answer="generative")
    (use,) = [u for u in answer["tools"] if u["name"] == "delegate_job"]
    assert use["ok"], use
    job = follow(url, answer["session_id"], headers)[-1]["job"]
    assert job["state"] == "completed" and job["result"]["ok"] is True, job
    return answer["session_id"], job


def test_the_next_turn_states_what_the_delegated_job_found_and_cites_it(
    server: str,
    chat: ChatServer,  # noqa: F811
) -> None:
    for headers in ({}, {"X-Heron-Context": "kube"}):
        session, job = delegated(server, headers)
        asked = len(chat.posted("/v1/chat/completions"))
        answer = chat_turn(server, headers, message="What did the check find?", session_id=session)
        assert answer["mode"] == "extractive", answer
        assert len(chat.posted("/v1/chat/completions")) == asked  # no model call
        said = answer["answer"]
        assert said.startswith(f'The job "{job["prompt"]}" finished, and its checks passed. [1]')
        assert job["result"]["summary"] in said
        (cited,) = answer["citations"]
        assert cited["job"] == job["id"] and cited["url_or_path"] == f"/jobs?job={job['id']}"
        # The page opens the link: the jobs pane, that job.
        opened = httpx.get(server + cited["url_or_path"], headers=headers, timeout=30)
        assert opened.status_code == 200

    # The default context's conversation, asked in Portuguese, then about something else.
    session, job = delegated(server, {})
    answer = chat_turn(server, {}, message="O que o job encontrou?", session_id=session)
    assert answer["answer"].startswith(f'O job "{job["prompt"]}" terminou, e suas verificações')
    assert [c["job"] for c in answer["citations"]] == [job["id"]]
    question = "How often should I water tomato plants?"
    answer = chat_turn(server, {}, message=question, session_id=session)
    assert answer["answer"].startswith("Water tomato plants deeply twice a week"), answer
    assert [(c["library"], c["job"]) for c in answer["citations"]] == [("garden", None)]
