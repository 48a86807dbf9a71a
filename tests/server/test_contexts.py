"""Contexts over every door of a real server: two contexts with different libraries and
workspaces each see only their own, over JSON-RPC, ``/v1``, MCP and the page; another
context's library, page or session is a 404, an unknown context too."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from heron.core.contexts import DEFAULT
from heron.errors import ConfigError
from heron.libraries import add_library, index_library
from heron.server import create_app
from heron.server.http.contexts import ContextRefused, choose
from heron.settings import Settings
from heron.store import open_store
from tests.libraries.conftest import PAGES, write_pages
from tests.server.conftest import heron_env, running

GARDEN = {
    "roses.md": "---\ntitle: Roses\n---\nPrune roses in late winter, above an outward bud.\n",
    "compost.md": "---\ntitle: Compost\n---\nA compost heap needs greens, browns and air.\n",
}
POD_QUESTION = "What does a Pod run?"
ROSE_QUESTION = "When do I prune roses?"
NOT_FOUND = -32004


def contexts(tmp: Path) -> dict[str, Any]:
    return {
        "kube": {"libraries": ["alpha"], "workspace": str(tmp / "ws-kube")},
        "garden": {"libraries": ["beta"], "workspace": str(tmp / "ws-garden")},
    }


class Door:
    """One server, called in a context (``None``: no header, the default context)."""

    def __init__(self, url: str, home: Path) -> None:
        self.url = url
        self.home = home  # the contexts' tmp folder

    def headers(self, context: str | None) -> dict[str, str]:
        return {} if context is None else {"X-Heron-Context": context}

    def call(self, context: str | None, method: str, params: Any = None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        reply = httpx.post(f"{self.url}/rpc", json=body, headers=self.headers(context), timeout=120)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def result(self, context: str | None, method: str, params: Any = None) -> Any:
        answer = self.call(context, method, params)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, context: str | None, method: str, params: Any = None) -> dict[str, Any]:
        answer = self.call(context, method, params)
        assert "error" in answer, answer
        return answer["error"]


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    tmp = tmp_path_factory.mktemp("contexts")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in heron_env(tmp).items():
            mp.setenv(name, value)
        for name in ("HERON_CONFIG", "HERON_API_TOKEN", "HERON_CONTEXT"):
            mp.delenv(name, raising=False)
        write_pages(tmp / "ws-kube", {"kube.txt": "kube only"})
        (tmp / "ws-garden").mkdir()
        settings = Settings(contexts=contexts(tmp))
        add_library("alpha", str(write_pages(tmp / "alpha", PAGES)), settings)
        add_library("beta", str(write_pages(tmp / "beta", GARDEN)), settings)
        with open_store(settings) as store:
            for name in ("alpha", "beta"):
                assert index_library(name, store, settings=settings).error is None
        with running(create_app(settings)) as (url, _):
            yield Door(url, tmp)


def names(libraries: list[dict[str, Any]]) -> list[str]:
    return sorted(lib["name"] for lib in libraries)


def test_each_context_lists_and_searches_its_own_libraries(door: Door) -> None:
    assert names(door.result(None, "library.list")) == ["alpha", "beta"]
    assert names(door.result("kube", "library.list")) == ["alpha"]
    assert names(door.result("garden", "library.list")) == ["beta"]
    assert names(door.result("garden", "library.status")) == ["beta"]
    # A question about the other context's pages finds nothing of them.
    found = door.result("kube", "search.query", {"query": ROSE_QUESTION})
    assert found and {r["library"] for r in found} == {"alpha"}
    found = door.result("garden", "search.query", {"query": POD_QUESTION})
    assert found and {r["library"] for r in found} == {"beta"}
    # Named outright, the other context's library is not there at all.
    for method, params in (
        ("search.query", {"query": POD_QUESTION, "library": "alpha"}),
        ("library.status", {"name": "alpha"}),
        ("library.pages", {"name": "alpha"}),
        ("library.passage", {"library": "alpha", "page": "concepts/pods", "first": 1, "last": 3}),
    ):
        error = door.error("garden", method, params)
        assert error["code"] == NOT_FOUND and "'alpha'" in error["message"], (method, error)
    assert door.result(None, "library.pages", {"name": "alpha"})  # the default sees it


def test_answers_and_sessions_stay_in_their_context(door: Door) -> None:
    asked = {"message": POD_QUESTION, "answer": "extractive"}
    kube = door.result("kube", "agent.chat", asked)
    assert kube["citations"] and {c["library"] for c in kube["citations"]} == {"alpha"}
    garden = door.result("garden", "agent.chat", asked)
    assert {c["library"] for c in garden["citations"]} <= {"beta"}
    session = kube["session_id"]
    assert session in [s["id"] for s in door.result("kube", "sessions.list")]
    assert session not in [s["id"] for s in door.result("garden", "sessions.list")]
    assert session not in [s["id"] for s in door.result(None, "sessions.list")]
    for method, params in (
        ("agent.chat", asked | {"session_id": session}),  # nor continued under its id
        ("agent.history", {"session_id": session}),
        ("sessions.rename", {"session_id": session, "title": "mine now"}),
        ("sessions.delete", {"session_id": session}),
    ):
        error = door.error("garden", method, params)
        assert error["code"] == NOT_FOUND and session in error["message"], (method, error)
    assert len(door.result("kube", "agent.history", {"session_id": session})) == 1


def test_tools_act_in_the_context_workspace(door: Door) -> None:
    listed = {"name": "list_files", "arguments": {"path": "."}}
    seen = json.dumps(door.result("kube", "tools.call", listed))
    assert "kube.txt" in seen
    assert "kube.txt" not in json.dumps(door.result("garden", "tools.call", listed))
    read = {"name": "read_file", "arguments": {"path": "kube.txt"}}
    assert door.result("kube", "tools.call", read)["result"]["content"] == "kube only"
    assert door.error("garden", "tools.call", read)["code"] != 0


def test_every_context_with_a_workspace_delegates_jobs(door: Door) -> None:
    # The agent of a context is made on its first chat; delegate_job is then its tool
    # (the tool ceiling decides whether a turn may call it), as in the default context.
    def tools(context: str | None) -> set[str]:
        door.result(context, "agent.chat", {"message": ROSE_QUESTION, "answer": "extractive"})
        return {t["name"] for t in door.result(context, "tools.list")["tools"]}

    assert "delegate_job" in tools("kube") and "delegate_job" in tools("garden")
    assert "delegate_job" not in tools(None)  # the default context here has no workspace


def test_methods_not_yet_scoped_answer_in_the_default_context_only(door: Door) -> None:
    error = door.error("kube", "ops.board")
    assert error["code"] == -32601 and "default context" in error["message"]
    assert door.result("kube", "models.list")  # reads nothing a context owns


def ids(items: list[dict[str, Any]]) -> list[Any]:
    return [item["id"] for item in items]


def wait_until(check: Any, what: str, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def kube_job(door: Door) -> dict[str, Any]:
    """A job of kube that waits for confirmation (the workers parked it there), and one
    of garden after it, both in a room ``ops`` (each context's own)."""
    gated = {"prompt": "deploy the fix", "risk_level": "deploy_allowed", "room": "ops"}
    job = door.result("kube", "jobs.create", gated)
    assert job["context"] == "kube"
    other = door.result("garden", "jobs.create", {"prompt": "is main broken?", "room": "ops"})
    wait_until(
        lambda: (
            door.result("kube", "jobs.get", {"id": job["id"]})["state"]
            == "waiting_for_confirmation"
        ),
        "the kube job to reach its gate",
    )
    return job | {"garden_job": other["id"]}


def test_jobs_stay_in_their_context(door: Door, kube_job: dict[str, Any]) -> None:
    job_id = kube_job["id"]
    assert job_id in ids(door.result("kube", "jobs.list"))
    garden = door.result("garden", "jobs.list")
    assert garden and job_id not in ids(garden) and {j["context"] for j in garden} == {"garden"}
    assert job_id not in ids(door.result(None, "jobs.list"))
    for method in ("jobs.get", "jobs.events", "jobs.confirm", "jobs.deny", "jobs.abort"):
        error = door.error("garden", method, {"id": job_id})
        assert error["code"] == NOT_FOUND and job_id in error["message"], (method, error)
    assert door.result("kube", "jobs.get", {"id": job_id})["state"] == "waiting_for_confirmation"
    stream = f"{door.url}/jobs/{job_id}/events/stream"
    assert httpx.get(stream, headers=door.headers("garden")).status_code == 404
    # The room's stream gives its jobs oldest first: garden's, not kube's older one.
    room = f"{door.url}/jobs/stream?room=ops"
    with httpx.stream("GET", room, headers=door.headers("garden"), timeout=30) as reply:
        assert reply.status_code == 200
        first = next(line for line in reply.iter_lines() if line.startswith("data:"))
    assert json.loads(first.removeprefix("data:"))["job"]["id"] == kube_job["garden_job"]
    # A job runs in its context's workspace: the default context here has none.
    error = door.error(None, "jobs.create", {"prompt": "is main broken?"})
    assert "HERON_TOOLS_ROOT" in error["message"]


def test_interventions_and_rooms_stay_in_their_context(
    door: Door, kube_job: dict[str, Any]
) -> None:
    # The kube job's gate is a card in kube's room, with its confirm button; no other
    # context sees it, nor can act on it.
    card = wait_until(
        lambda: [
            i
            for i in door.result("kube", "interventions.list")
            if i["facts"].get("job_id") == kube_job["id"]
        ],
        "the kube job's card",
    )[0]
    assert card["context"] == "kube"
    for context in ("garden", None):
        assert card["id"] not in ids(door.result(context, "interventions.list"))
    for method, params in (
        ("interventions.act", {"id": card["id"], "action": 0, "by": "eve"}),
        ("interventions.outcome", {"id": card["id"], "outcome": "dismiss"}),
    ):
        error = door.error("garden", method, params)
        assert error["code"] == NOT_FOUND, (method, error)
    # A room of one context is not the room of that name in another: both are sent,
    # neither holds back the other (guard, cooldown), each lists and streams its own.
    notice = {"kind": "notice", "key": "n1", "room": "shared", "facts": {"message": "hi"}}
    mine = door.result("kube", "interventions.raise", notice)
    theirs = door.result("garden", "interventions.raise", notice)
    assert mine["status"] == theirs["status"] == "delivered" and mine["id"] < theirs["id"]
    listed = door.result("garden", "interventions.list", {"room": "shared"})
    assert ids(listed) == [theirs["id"]]
    url = f"{door.url}/interventions/stream?room=shared"
    with httpx.stream("GET", url, headers=door.headers("garden"), timeout=30) as reply:
        assert reply.status_code == 200
        first = next(line for line in reply.iter_lines() if line.startswith("id:"))
    assert first == f"id: {theirs['id']}"  # kube's card, older, is not replayed here


def test_the_cli_lists_the_jobs_of_its_context(
    door: Door, kube_job: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from heron.cli.app import app

    tables = "".join(
        f"[contexts.{name}]\nlibraries = {json.dumps(spec['libraries'])}\n"
        f"workspace = {json.dumps(spec['workspace'])}\n"
        for name, spec in contexts(Path(door.home)).items()
    )
    config = tmp_path / "heron.toml"
    config.write_text(tables)
    monkeypatch.setenv("HERON_CONFIG", str(config))
    monkeypatch.setenv("HERON_CONTEXT", DEFAULT)  # --context wins over the variable
    listed = CliRunner().invoke(app, ["--context", "kube", "jobs", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    found = json.loads(listed.output)
    assert ids(found) == [kube_job["id"]] and found[0]["context"] == "kube"
    shown = CliRunner().invoke(app, ["--context", "garden", "jobs", "show", kube_job["id"]])
    assert shown.exit_code == 1 and "No job" in str(shown.exception)


def test_openai_door_answers_from_the_context_libraries(door: Door) -> None:
    def ask(context: str | None, question: str) -> dict[str, Any]:
        body = {
            "model": "local",
            "messages": [{"role": "user", "content": question}],
            "answer": "extractive",
        }
        reply = httpx.post(
            f"{door.url}/v1/chat/completions", json=body, headers=door.headers(context), timeout=120
        )
        assert reply.status_code == 200, reply.text
        return reply.json()

    kube = ask("kube", POD_QUESTION)
    assert {c["library"] for c in kube["citations"]} == {"alpha"}
    garden = ask("garden", ROSE_QUESTION)
    assert {c["library"] for c in garden["citations"]} == {"beta"}
    assert {c["library"] for c in ask("garden", POD_QUESTION)["citations"]} <= {"beta"}


async def mcp_search(url: str, context: str, library: str | None = None) -> Any:
    client = httpx2.AsyncClient(headers={"X-Heron-Context": context}, timeout=120)
    async with client, Client(streamable_http_client(url, http_client=client)) as mcp:
        arguments: dict[str, Any] = {"query": POD_QUESTION, "top_k": 3}
        if library:
            arguments["library"] = library
        found = await mcp.call_tool("search_docs", arguments)
        resources = await mcp.list_resources()
    return found, [str(r.uri) for r in resources.resources]


def test_mcp_search_stays_in_its_context(door: Door) -> None:
    found, resources = anyio.run(mcp_search, f"{door.url}/mcp", "kube")
    assert not found.is_error
    assert {r["library"] for r in found.structured_content["results"]} == {"alpha"}
    assert resources and all(uri.startswith("heron://library/alpha/") for uri in resources)
    found, resources = anyio.run(mcp_search, f"{door.url}/mcp", "garden", "alpha")
    assert found.is_error and "'alpha'" in found.content[0].text
    assert resources and all(uri.startswith("heron://library/beta/") for uri in resources)


def test_the_page_keeps_its_context(door: Door) -> None:
    page = httpx.get(f"{door.url}/libraries", params={"context": "garden"})
    assert page.status_code == 200
    assert '<meta name="heron-context" content="garden">' in page.text
    assert 'href="/jobs?context=garden"' in page.text  # its links stay in it
    header = httpx.get(f"{door.url}/", headers={"X-Heron-Context": "kube"})
    assert '<meta name="heron-context" content="kube">' in header.text
    source = {"library": "alpha", "page": "concepts/pods"}
    assert httpx.get(f"{door.url}/source", params=source).status_code == 200
    shown = httpx.get(f"{door.url}/source", params=source | {"context": "garden"})
    assert shown.status_code == 404 and "Pod runs" not in shown.text


def test_an_unknown_or_bad_context_is_refused_with_its_reason(door: Door) -> None:
    unknown = httpx.post(
        f"{door.url}/v1/chat/completions", json={}, headers={"X-Heron-Context": "nope"}
    )
    assert unknown.status_code == 404
    message = unknown.json()["error"]["message"]
    assert "No context 'nope'" in message and "garden" in message and "kube" in message
    bad = httpx.post(f"{door.url}/rpc", json={}, headers={"X-Heron-Context": "../x"})
    assert bad.status_code == 400 and "Invalid context name" in bad.json()["error"]["message"]
    page = httpx.get(f"{door.url}/", params={"context": "nope"})
    assert page.status_code == 404


def test_a_key_bound_to_a_context_stays_in_it(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, contexts=contexts(tmp_path))
    key = SimpleNamespace(context="kube")
    assert choose(settings, None, key) == "kube"
    assert choose(settings, "kube", key) == "kube"
    with pytest.raises(ContextRefused) as refused:
        choose(settings, "garden", key)
    assert refused.value.status == 403 and "bound to context 'kube'" in refused.value.message
    assert choose(settings, "garden", SimpleNamespace(context=None)) == "garden"
    assert choose(settings, None) == DEFAULT


def test_contexts_are_read_from_heron_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "heron.toml"
    config.write_text(
        '[contexts.geomind]\nlibraries = ["maps"]\nworkspace = "/srv/geomind"\n'
        'skills_dirs = ["/srv/geomind/skills"]\n'
    )
    monkeypatch.setenv("HERON_CONFIG", str(config))
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(tmp_path))
    settings = Settings(home=tmp_path)
    geomind = settings.in_context("geomind")
    assert geomind.tools.root == Path("/srv/geomind")
    assert geomind.skills.extra_dirs == [Path("/srv/geomind/skills")]
    assert geomind.in_context(DEFAULT).tools.root == tmp_path
    monkeypatch.setenv("HERON_CONTEXT", "geomind")  # a context named by the variable
    assert Settings(home=tmp_path).tools.root == Path("/srv/geomind")
    config.write_text("[contexts.geomind]\nlibrary = []\n")
    with pytest.raises(ConfigError, match=r"geomind\.library: Extra inputs"):
        Settings(home=tmp_path)


def test_the_cli_acts_in_the_context_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from heron.cli.app import app

    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    monkeypatch.delenv("HERON_CONTEXT", raising=False)
    config = tmp_path / "heron.toml"
    config.write_text('[contexts.kube]\nlibraries = ["alpha"]\n')
    monkeypatch.setenv("HERON_CONFIG", str(config))
    (tmp_path / "libraries.txt").write_text(f"alpha {tmp_path}\nbeta {tmp_path}\n")
    runner = CliRunner()
    listed = runner.invoke(app, ["--context", "kube", "library", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [lib["name"] for lib in json.loads(listed.output)] == ["alpha"]
    everything = runner.invoke(app, ["library", "list", "--json"])  # the option is gone
    assert [lib["name"] for lib in json.loads(everything.output)] == ["alpha", "beta"]
    unknown = runner.invoke(app, ["--context", "nope", "library", "list"])
    assert unknown.exit_code == 1 and "No context 'nope'" in str(unknown.exception)
