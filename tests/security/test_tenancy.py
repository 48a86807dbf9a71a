"""Attacks of one context on another's names (issue 45), and of one key on the tool
ceiling of another door.

A real ``heron serve`` on loopback serves three contexts, each with its own library list
and workspace, and named keys bound to them: ``alpha`` owns the library ``alpha-docs``
(a launch plan), ``beta`` attacks it with its own admin key, ``gamma`` watches what it
is shown. Before the rules of ``heron.tenancy``, ``heron.libraries.config`` and
``heron.tools.ceiling``, beta's admin key added a library named ``alpha-docs`` and read
alpha's text through it (then re-indexed or removed alpha's index), the examples learned
from alpha's questions were listed to every context, alpha's critical card's audio was
served to beta, and ``/metrics``, ``/ready`` and a store-counts job named alpha's
library and key to beta. The last tests hold one ``tools`` key to one ceiling through
JSON-RPC and MCP, and MCP's ``ask`` to MCP's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from heron.errors import ConfigError, InputError
from heron.keys import open_keys
from heron.libraries import add_library, index_library, read_libraries
from heron.libraries.library import forget_library
from heron.server import create_app
from heron.settings import Settings
from heron.store import open_store
from heron.tools.usage import ToolUsage, usage_file
from tests.libraries.conftest import write_pages
from tests.security.served import make_repo
from tests.server.conftest import heron_env, running

LAUNCH_PAGE = (
    "---\ntitle: Launch plan\n---\nThe orbital relay launches on the ninth of March "
    "from pad seven, with the backup crew on standby.\n"
)
LAUNCH = "When does the orbital relay launch?"
SECRET = "orbital"
NOT_FOUND, BAD_INPUT = -32004, -32001


@dataclass
class Tenants:
    """The server, its contexts' folder and each key's token by name."""

    url: str
    tmp: Path
    tokens: dict[str, str]

    @property
    def home(self) -> Path:
        return self.tmp / "home"

    def headers(self, who: str | None = None, context: str | None = None) -> dict[str, str]:
        headers = {"authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return headers | ({"x-heron-context": context} if context else {})

    def call(self, who: str | None, method: str, params: Any = None, **kw: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        reply = httpx.post(
            f"{self.url}/rpc", json=body, headers=self.headers(who, **kw), timeout=120
        )
        assert reply.status_code == 200, reply.text
        return reply.json()

    def result(self, who: str | None, method: str, params: Any = None, **kw: Any) -> Any:
        answer = self.call(who, method, params, **kw)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, who: str | None, method: str, params: Any = None, **kw: Any) -> Any:
        answer = self.call(who, method, params, **kw)
        assert "error" in answer, answer
        return answer["error"]


def contexts(tmp: Path) -> dict[str, Any]:
    return {
        name: {"libraries_file": str(tmp / f"{name}.txt"), "workspace": str(tmp / f"ws-{name}")}
        for name in ("alpha", "beta", "gamma")
    }


KEYS = {
    "alpha-admin": (("admin",), "alpha"),
    "beta-admin": (("admin",), "beta"),
    "beta-reader": (("read",), "beta"),
    "gamma-reader": (("read",), "gamma"),
}


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenants]:
    tmp = tmp_path_factory.mktemp("tenancy")
    with pytest.MonkeyPatch.context() as mp:
        env = heron_env(tmp) | {"HERON_LIBRARY_ROOTS": json.dumps([str(tmp)])}
        for name, value in env.items():
            mp.setenv(name, value)
        for name in ("HERON_CONFIG", "HERON_API_TOKEN", "HERON_CONTEXT"):
            mp.delenv(name, raising=False)
        write_pages(tmp / "ws-alpha", {"plan.txt": "alpha's workspace"})
        make_repo(tmp / "ws-beta")  # beta's jobs check it with git
        (tmp / "ws-gamma").mkdir()
        settings = Settings(contexts=contexts(tmp))
        alpha = settings.in_context("alpha")
        add_library(
            "alpha-docs", str(write_pages(tmp / "alpha-docs", {"launch.md": LAUNCH_PAGE})), alpha
        )
        with open_store(settings) as store:
            assert index_library("alpha-docs", store, settings=alpha).error is None
        with open_keys(settings) as keys:
            tokens = {
                name: keys.create(name, scopes, context=context)[1]
                for name, (scopes, context) in KEYS.items()
            }
        with running(create_app(settings)) as (url, _):
            yield Tenants(url, tmp, tokens)


# -- a library's name is one context's ------------------------------------------------


def test_one_context_cannot_take_another_s_library_name(tenants: Tenants) -> None:
    t = tenants
    beta_docs = write_pages(t.tmp / "beta-docs", {"launch.md": "---\ntitle: Ours\n---\nBeta's.\n"})
    taken = t.error("beta-admin", "library.add", {"name": "alpha-docs", "source": str(beta_docs)})
    assert taken["code"] == BAD_INPUT, taken
    assert "taken by another context" in taken["message"]
    assert "alpha.txt" not in taken["message"]  # whose list holds it is not told
    # So nothing of alpha's is beta's to read, re-index or remove, by any method or route.
    for method, params in (
        ("search.query", {"query": LAUNCH, "library": "alpha-docs"}),
        ("library.status", {"name": "alpha-docs"}),
        ("library.pages", {"name": "alpha-docs"}),
        ("library.passage", {"library": "alpha-docs", "page": "launch", "first": 1, "last": 9}),
        ("library.index", {"name": "alpha-docs"}),
        ("library.remove", {"name": "alpha-docs"}),
    ):
        error = t.error("beta-admin", method, params)
        assert error["code"] == NOT_FOUND, (method, error)
    assert SECRET not in json.dumps(t.call("beta-admin", "search.query", {"query": LAUNCH}))
    page = {"library": "alpha-docs", "page": "launch"}
    source = httpx.get(f"{t.url}/source", params=page, headers=t.headers("beta-reader"))
    assert source.status_code == 404 and SECRET not in source.text
    # Heron's own indexes are no library's either: skills.alpha would be alpha's skills.
    for name in ("skills.alpha", "skills", "tools"):
        error = t.error("beta-admin", "library.add", {"name": name, "source": str(beta_docs)})
        assert error["code"] == BAD_INPUT and "Heron's own indexes" in error["message"], name
    # Alpha's library is as it was.
    found = t.result("alpha-admin", "search.query", {"query": LAUNCH})
    assert found[0]["library"] == "alpha-docs" and SECRET in json.dumps(found)


def test_a_library_is_shared_only_by_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in heron_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    docs = write_pages(tmp_path / "docs", {"launch.md": LAUNCH_PAGE})
    other = write_pages(tmp_path / "other", {"launch.md": "---\ntitle: Other\n---\nOther.\n"})
    for name in ("a", "b"):  # the operator writes one library into two lists, by hand
        (tmp_path / f"{name}.txt").write_text(f"shared {docs}\n")
    specs = {name: {"libraries_file": str(tmp_path / f"{name}.txt")} for name in ("a", "b")}
    settings = Settings(contexts=specs)
    a, b = settings.in_context("a"), settings.in_context("b")
    assert [lib.name for lib in read_libraries(b)] == ["shared"]
    with open_store(settings) as store:
        assert index_library("shared", store, settings=a).error is None
        forget_library("shared", store, b)  # b lets go of it: a's index stays a's
        assert [lib.name for lib in read_libraries(b)] == []
        assert "shared" in {ns.name for ns in store.namespaces()}
    # Adding never makes a share: the name is a's now, whatever the source.
    with pytest.raises(InputError, match="taken by another context"):
        add_library("shared", str(docs), b)
    # A list naming it as another library is refused in every context that lists it.
    (tmp_path / "c.txt").write_text(f"shared {other}\n")
    clash = Settings(contexts=specs | {"c": {"libraries_file": str(tmp_path / "c.txt")}})
    for name in ("a", "c"):
        with pytest.raises(ConfigError, match="also in another context's library list") as info:
            read_libraries(clash.in_context(name))
        assert "a.txt" not in str(info.value).replace(str(tmp_path / f"{name}.txt"), "")


# -- what a context learned is its own ------------------------------------------------


def test_tool_examples_stay_in_the_context_that_asked(tenants: Tenants) -> None:
    t = tenants
    asked = "List the files in my workspace"
    answer = t.result("alpha-admin", "agent.chat", {"message": asked, "answer": "extractive"})
    assert [u["name"] for u in answer["tools"] if u["ok"]] == ["list_files"], answer["tools"]
    # gamma's toolbox opens after alpha asked: it learns no request of alpha's.
    listed = t.result("gamma-reader", "tools.list")
    assert asked not in json.dumps(listed)
    learned = ToolUsage(usage_file(t.home / "tools.db"), context="alpha").examples()
    assert asked in learned["list_files"]


def test_a_card_s_audio_is_served_only_in_its_context(tenants: Tenants) -> None:
    t = tenants
    card = t.result(
        "alpha-admin",
        "interventions.raise",
        {"kind": "watchdog_incident", "key": "watchdog:relay", "room": "ops",
         "severity": "critical", "facts": {"check": "relay", "detail": "down"}},
    )  # fmt: skip
    assert card["audio_url"], card
    audio = f"{t.url}{card['audio_url']}"
    for who in ("beta-reader", "gamma-reader", None):  # None: the default context
        assert httpx.get(audio, headers=t.headers(who)).status_code == 404, who
    own = httpx.get(audio, headers=t.headers("alpha-admin"))
    assert own.status_code == 200 and own.content[:4] == b"RIFF"


# -- what the server says of itself ---------------------------------------------------


def test_metrics_and_ready_name_only_the_caller_s_own(tenants: Tenants) -> None:
    t = tenants
    t.result("alpha-admin", "library.list")  # alpha's key has usage to show
    t.result("beta-reader", "library.list")
    metrics = httpx.get(f"{t.url}/metrics", headers=t.headers("beta-reader"))
    assert metrics.status_code == 200
    assert "alpha-docs" not in metrics.text and "alpha-admin" not in metrics.text
    assert 'key="beta-reader"' in metrics.text and "heron_http_requests_total" in metrics.text
    ready = httpx.get(f"{t.url}/ready", headers=t.headers("beta-reader"))
    assert "alpha-docs" not in ready.text
    assert ready.json()["checks"]["config"]["settings"]["contexts"] == ["beta"]
    # Each context's /ready is its own libraries' readiness.
    mine = httpx.get(f"{t.url}/ready", headers=t.headers("alpha-admin")).json()
    assert mine["checks"]["libraries"]["indexed"] == ["alpha-docs"]
    # The server's administrator sees every context's.
    everything = httpx.get(f"{t.url}/metrics").text
    assert 'namespace="alpha-docs"' in everything and 'key="alpha-admin"' in everything


def wait_until(check: Callable[[], Any], what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_store_counts_job_counts_only_its_context_s_namespaces(tenants: Tenants) -> None:
    t = tenants
    job = t.result("beta-admin", "jobs.create", {"prompt": "How many records does the store hold?"})

    def ended() -> bool:
        state = t.result("beta-admin", "jobs.get", {"id": job["id"]})["state"]
        return state in ("completed", "aborted", "failed")

    wait_until(ended, "beta's job to end")
    events = json.dumps(t.result("beta-admin", "jobs.events", {"id": job["id"]}))
    assert "store_counts" in events and "namespaces" in events
    assert "alpha-docs" not in events


# -- one key, one tool ceiling --------------------------------------------------------

#: What a ``tools`` key asked for by name: a file written, a program run, an MCP tool
#: without annotations (``execute``, ``tests/security/test_mcp.py``'s ``crm``).
OVER_THE_CEILING = (
    ("write_file", {"path": "written.txt", "content": "x"}),
    ("run_command", {"command": "touch touched.txt"}),
    ("crm.add_contact", {"name": "Ada"}),
)
#: A request whose turn the agent's triage hands to ``write_file`` (the replay model
#: then calls it with arguments from its schema).
WRITE_REQUEST = "Create a file notes.txt in my workspace containing hello"


@dataclass
class Ceilinged:
    url: str
    workspace: Path
    tokens: dict[str, str]

    def rpc(self, who: str | None, method: str, params: Any) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {self.tokens[who]}"} if who else {}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = httpx.post(f"{self.url}/rpc", json=body, headers=headers, timeout=120)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def mcp(self, who: str, tool: str, arguments: dict[str, Any]) -> Any:
        async def call() -> Any:
            headers = {"authorization": f"Bearer {self.tokens[who]}"}
            http = httpx2.AsyncClient(headers=headers, timeout=120)
            async with (
                http,
                Client(streamable_http_client(f"{self.url}/mcp", http_client=http)) as c,
            ):
                return await c.call_tool(tool, arguments)

        return anyio.run(call)


@pytest.fixture(scope="module")
def ceilinged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ceilinged]:
    """A loopback server whose agent may write (HERON_AGENT_TOOL_SAFETY=write) and whose
    MCP clients may only read (the default), with a workspace, ``touch`` allowed, the
    ``crm`` MCP server and the OpenAI replay server as its model."""
    from tests.llm_servers import KEY, ONE_MODEL, serve
    from tests.security.test_mcp import entry

    tmp = tmp_path_factory.mktemp("ceiling")
    (tmp / "ws").mkdir()
    (tmp / "mcp.json").write_text(json.dumps({"mcpServers": {"crm": entry("crm")}}))
    with serve() as chat, pytest.MonkeyPatch.context() as mp:
        (tmp / "models.yml").write_text(ONE_MODEL.format(url=chat.url))
        env = heron_env(tmp) | {
            "HERON_TOOLS_ROOT": str(tmp / "ws"),
            "HERON_TOOLS_COMMANDS": '["touch"]',
            "HERON_MCP_CONFIG": str(tmp / "mcp.json"),
            "HERON_MODELS_FILE": str(tmp / "models.yml"),
            "HERON_AGENT_TOOL_SAFETY": "write",
            "TEST_OPENAI_KEY": KEY,
        }
        for name, value in env.items():
            mp.setenv(name, value)
        for name in ("HERON_CONFIG", "HERON_API_TOKEN", "HERON_CONTEXT", "HERON_MCP_TOOL_SAFETY"):
            mp.delenv(name, raising=False)
        settings = Settings()
        with open_keys(settings) as keys:
            tokens = {name: keys.create(name, [name])[1] for name in ("tools", "chat")}
        with running(create_app(settings)) as (url, _):
            yield Ceilinged(url, tmp / "ws", tokens)


def test_one_key_meets_one_tool_ceiling_through_json_rpc_and_mcp(ceilinged: Ceilinged) -> None:
    c = ceilinged
    for name, arguments in OVER_THE_CEILING:
        refused = c.mcp("tools", "call_tool", {"name": name, "arguments": arguments})
        assert refused.is_error and "HERON_MCP_TOOL_SAFETY" in refused.content[0].text, name
        answer = c.rpc("tools", "tools.call", {"name": name, "arguments": arguments})
        assert "error" in answer, (name, answer)  # it ran what MCP refused
        assert "HERON_MCP_TOOL_SAFETY" in answer["error"]["message"], answer
    assert sorted(p.name for p in c.workspace.iterdir()) == []
    # The server's administrator (no key, on this loopback server) calls any tool by name.
    ran = c.rpc(None, "tools.call", {"name": "run_command", "arguments": {"command": "touch ok"}})
    assert ran["result"]["result"]["exit_code"] == 0 and (c.workspace / "ok").exists()
    (c.workspace / "ok").unlink()


def test_mcp_s_ask_runs_the_agent_at_mcp_s_ceiling(ceilinged: Ceilinged) -> None:
    c = ceilinged
    asked = c.mcp("chat", "ask", {"message": WRITE_REQUEST})
    assert not asked.is_error, asked.content[0].text
    assert not [u for u in asked.structured_content["tools"] if u["name"] == "write_file"]
    assert sorted(p.name for p in c.workspace.iterdir()) == []
    # The same request through the agent's own door, at the agent's ceiling, writes:
    # the attack is real, and each door keeps its operator's setting.
    wrote = c.rpc("chat", "agent.chat", {"message": WRITE_REQUEST})["result"]
    assert [u["name"] for u in wrote["tools"] if u["ok"]] == ["write_file"], wrote["tools"]
    assert list(c.workspace.iterdir())
