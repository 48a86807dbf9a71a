"""``/v1`` with the client's tools, never Heron's side effects: the real ``openai`` SDK
against a real server on loopback that has a workspace (``tools_root``, so ``delegate_job``
is registered) and a job store, answered by the bundled local model.

Every ``tool_choice`` form is sent with two client tools: none runs a tool of Heron's or
creates a job, ``required`` and a named function come back as ``tool_calls`` in OpenAI's
shape, and ``finish_reason`` is always one of OpenAI's. Without client tools, Heron's
tools are held to ``openai_tool_safety`` (``read``): a request that asks for a job gets
none. Each request is one model call at most (16 tokens), so the module stays quick.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from heron.agent.answer import FINISH_REASONS
from heron.jobs import open_jobs
from heron.server import create_app
from heron.server.doors.openai import CompletionRequest, turn
from heron.settings import Settings
from tests.server.conftest import WEATHER, Served, running

#: A request that tempts every tool of Heron's that acts: a job, a listing.
QUESTION = (
    "Hand this to a background job: check whether main builds, then list the files in my workspace."
)
TICKET = {
    "type": "function",
    "function": {
        "name": "create_ticket",
        "description": "Open a ticket in the team's tracker for a task to be done.",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "urgent": {"type": "boolean"}},
            "required": ["title"],
        },
    },
}
CLIENT_TOOLS = [WEATHER, TICKET]
NAMES = {"get_weather", "create_ticket"}
#: Every ``tool_choice`` form a client sends, as SDK keywords.
FORMS: dict[str, dict[str, Any]] = {
    "absent": {},
    "auto": {"tool_choice": "auto"},
    "none": {"tool_choice": "none"},
    "required": {"tool_choice": "required"},
    "named": {"tool_choice": {"type": "function", "function": {"name": "create_ticket"}}},
}
_COUNTER = re.compile(r"^heron_tool_calls_total\{([^}]*)\} ([0-9.e+]+)$", re.M)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "notes-for-alice.txt").write_text("hello\n")
    return root


@pytest.fixture(scope="module")
def served_ws(
    heron_home: Path, workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    # Heron's defaults otherwise: agent_tool_safety and openai_tool_safety both read.
    settings = Settings(
        tools={"root": workspace}, library={"roots": [tmp_path_factory.getbasetemp()]}
    )
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


@pytest.fixture(scope="module")
def client(served_ws: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served_ws.url}/v1", api_key="unused", max_retries=0)


def tool_runs(served: Served) -> Counter[str]:
    """Tool calls the agent made, by tool, from the server's own ``/metrics``."""
    text = httpx.get(f"{served.url}/metrics", timeout=30).text
    runs: Counter[str] = Counter()
    for labels, value in _COUNTER.findall(text):
        tool = dict(re.findall(r'(\w+)="([^"]*)"', labels))["tool"]
        runs[tool] += int(float(value))
    return runs


def job_count(served: Served) -> int:
    jobs = open_jobs(served.settings)
    try:
        return len(jobs.list(limit=1000))
    finally:
        jobs.close()


def ask(client: openai.OpenAI, **options: Any) -> Any:
    """``QUESTION`` to the local model: 16 tokens of text, or room for a whole call."""
    forced = options.get("tool_choice") not in (None, "auto", "none")
    return client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=options.pop("max_tokens", 96 if forced else 16),
        **options,
    )


@pytest.mark.parametrize("form", FORMS)
def test_every_tool_choice_form_with_client_tools_runs_nothing_of_herons(
    client: openai.OpenAI, served_ws: Served, form: str
) -> None:
    runs, jobs = tool_runs(served_ws), job_count(served_ws)
    done = ask(client, tools=CLIENT_TOOLS, **FORMS[form])
    choice = done.choices[0]
    assert choice.finish_reason in FINISH_REASONS
    assert "finish_detail" in done.model_extra
    calls = choice.message.tool_calls or []
    if form in ("required", "named"):
        assert choice.finish_reason == "tool_calls" and calls
        for call in calls:
            assert call.id and call.type == "function" and call.function.name in NAMES
            assert isinstance(call.function.arguments, str)
            assert isinstance(json.loads(call.function.arguments), dict)
        if form == "named":
            assert {c.function.name for c in calls} == {"create_ticket"}
    elif form == "none":
        assert calls == [] and choice.finish_reason in ("stop", "length")
    else:  # auto: a call, when the model makes one, is the client's
        assert {c.function.name for c in calls} <= NAMES
    assert tool_runs(served_ws) - runs == Counter()  # not one tool of Heron's
    assert job_count(served_ws) == jobs  # not one job


def test_a_required_call_streams_as_openai_deltas(client: openai.OpenAI, served_ws: Served) -> None:
    runs, jobs = tool_runs(served_ws), job_count(served_ws)
    chunks = list(ask(client, tools=CLIENT_TOOLS, tool_choice="required", stream=True))
    deltas = [
        call for c in chunks if c.choices and c.choices[0].delta.tool_calls
        for call in c.choices[0].delta.tool_calls
    ]  # fmt: skip
    assert deltas and [d.index for d in deltas] == list(range(len(deltas)))
    for delta in deltas:
        assert delta.id and delta.type == "function" and delta.function.name in NAMES
        assert isinstance(json.loads(delta.function.arguments), dict)
    finishing = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishing[-1] == "tool_calls" and set(finishing[:-1]) == {None}
    assert "finish_detail" in chunks[-1].model_extra  # beside citations, on the last chunk
    assert tool_runs(served_ws) - runs == Counter() and job_count(served_ws) == jobs


def test_a_call_cut_by_max_tokens_is_a_400_saying_so(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match=r"max_tokens \(4\) cut the model's call"):
        ask(client, tools=CLIENT_TOOLS, tool_choice="required", max_tokens=4)


def test_without_client_tools_herons_tools_stay_read_only(
    client: openai.OpenAI, served_ws: Served
) -> None:
    runs, jobs = tool_runs(served_ws), job_count(served_ws)
    done = ask(client)
    assert done.choices[0].finish_reason in FINISH_REASONS
    ran = tool_runs(served_ws) - runs
    registry = served_ws.server.config.app.state.runtime.agent.toolbox.registry
    assert {registry.get(name).safety for name in ran} <= {"read"}, ran  # list_files may run
    assert not {"delegate_job", "write_file", "run_command"} & set(ran)
    assert job_count(served_ws) == jobs


def test_openai_tool_safety_is_what_v1_requests_run_under(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = CompletionRequest(model="local", messages=[{"role": "user", "content": "hi"}])
    asked = turn(request, Settings())
    assert (asked.tool_safety, asked.surface) == ("read", "api")
    monkeypatch.setenv("HERON_OPENAI_TOOL_SAFETY", "execute")  # the operator enables it
    assert turn(request, Settings()).tool_safety == "execute"
    # ...and still no python_exec: a client's request never runs code here (Agent.route)
    assert turn(request, Settings()).local_tools is False
