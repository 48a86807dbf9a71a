"""Every Server-Sent Events route on sse-starlette (``heron.server.http.events``): a quiet
stream gets a keep-alive comment within ``server_sse_ping``, every stream carries
``X-Accel-Buffering: no``, and a ``/chat/stream`` answer stops when its client has gone."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.server import create_app
from heron.settings import Settings
from tests import llm_servers
from tests.llm_servers import KEY, ONE_MODEL, ChatServer, serve
from tests.server.conftest import Served, running

#: The keep-alive interval of the server under test, and how long the replay's model
#: pauses after its first piece of text: many intervals, so the stream is quiet then.
PING = 0.2
PAUSE = 3.0
QUESTION = {"role": "user", "content": "How do I roll back a deployment?"}


@pytest.fixture(scope="module")
def quiet(heron_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server pinging every ``PING`` seconds whose model is on the replay, and whose
    answers stop at once when no client follows them (``server_stream_grace`` 0)."""
    tmp = tmp_path_factory.mktemp("streams")
    models = tmp / "models.yml"
    with serve() as replay, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TEST_OPENAI_KEY", KEY)
        models.write_text(ONE_MODEL.format(url=replay.url))
        settings = Settings(
            llm={"models_file": models},
            server={"sse_ping": PING, "stream_grace": 0},
            tools={"root": tmp},  # jobs run in a workspace
        )
        with running(create_app(settings)) as (url, server):
            served = Served(url, heron_home / "home", settings, server)
            served.replay = replay  # type: ignore[attr-defined]
            yield served


@pytest.fixture
def paused(quiet: Served, monkeypatch: pytest.MonkeyPatch) -> ChatServer:
    """The replay, its OpenAI stream pausing ``PAUSE`` seconds after its first text."""
    stream = llm_servers._openai_stream

    def pausing(body: dict[str, Any], *args: Any) -> Iterator[dict[str, Any]]:
        texts = 0
        for event in stream(body, *args):
            yield event
            texts += llm_servers._has_text(event)
            if texts == 1 and llm_servers._has_text(event):
                time.sleep(PAUSE)

    monkeypatch.setattr(llm_servers, "_openai_stream", pausing)
    return quiet.replay  # type: ignore[attr-defined]


def check_quiet(response: httpx.Response) -> tuple[list[str], Iterator[str]]:
    """The lines before the first keep-alive comment, which came within its interval
    (and some slack for a loaded machine) of the line before it, and the lines after."""
    assert response.status_code == 200, response.read()
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-accel-buffering"] == "no"
    last, before, lines = time.monotonic(), [], response.iter_lines()
    for line in lines:
        if line == ": keep-alive":
            assert time.monotonic() - last < PING * 5
            return before, lines
        last = time.monotonic()
        before.append(line)
    raise AssertionError(f"the stream ended without a keep-alive: {before}")


@pytest.mark.usefixtures("paused")
def test_chat_stream_sends_keep_alives_while_the_model_is_quiet(quiet: Served) -> None:
    body = {"message": QUESTION["content"], "answer": "generative"}
    with quiet.client() as http, http.stream("POST", "/chat/stream", json=body) as response:
        before, rest = check_quiet(response)
        assert "event: token" in before and "event: final" in list(rest)


@pytest.mark.usefixtures("paused")
def test_openai_stream_sends_keep_alives_and_keeps_its_format(quiet: Served) -> None:
    body = {"model": "gpt", "messages": [QUESTION], "stream": True}
    with quiet.client() as http, http.stream("POST", "/v1/chat/completions", json=body) as r:
        before, lines = check_quiet(r)
        rest = list(lines)
    # OpenAI's own lines, which the SDK reads: data only, no event names or ids.
    assert before[0].startswith('data: {"id": "chatcmpl-')
    assert [line for line in rest if line and not line.startswith(("data: ", ":"))] == []
    assert rest[-2:] == ["data: [DONE]", ""]


def test_job_stream_sends_keep_alives_while_the_job_waits(quiet: Served) -> None:
    job = quiet.rpc("jobs.create", {"prompt": "deploy", "requires_confirmation": True})
    job_id = job["result"]["id"]
    try:
        with quiet.client() as http, http.stream("GET", f"/jobs/{job_id}/events/stream") as r:
            before, _ = check_quiet(r)
        assert "id: 1" in before  # the history came first, as before
    finally:
        quiet.rpc("jobs.abort", {"id": job_id})


def test_interventions_stream_sends_keep_alives_in_a_quiet_room(quiet: Served) -> None:
    with (
        quiet.client() as http,
        http.stream("GET", "/interventions/stream", params={"room": "quiet"}) as response,
    ):
        assert check_quiet(response)[0] == []


@pytest.mark.usefixtures("paused")
def test_chat_answer_stops_at_its_next_token_when_the_client_has_gone(quiet: Served) -> None:
    body = {"message": QUESTION["content"], "answer": "generative"}
    with quiet.client() as http:
        with http.stream("POST", "/chat/stream", json=body) as response:
            lines = response.iter_lines()
            stream_id = next(lines).removeprefix("id: ").partition(":")[0]
            assert "event: token" in list(itertools.takewhile(lambda x: x != ": keep-alive", lines))
        # The client has gone while the model pauses; the agent stops at the model's next
        # token instead of finishing the answer for no one (grace 0 here). A resume
        # still replays what was kept, ending with the error that says so.
        time.sleep(PAUSE + 1)
        headers = {"last-event-id": f"{stream_id}:1"}
        with http.stream("GET", f"/chat/stream/{stream_id}", headers=headers) as resumed:
            events = [line for line in resumed.iter_lines() if line.startswith(("event", "data"))]
    names = [line.removeprefix("event: ") for line in events if line.startswith("event")]
    assert "final" not in names and names[-1] == "error", names
    assert '"type": "Stopped"' in events[-1]
