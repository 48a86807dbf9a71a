"""The MCP client against real MCP servers written here with the SDK (``MCPServer``),
over stdio and streamable HTTP on 127.0.0.1, plus servers that hang, exit or speak
garbage. Run as a script, this file *is* the server: ``python test_mcp_client.py MODE``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.core.errors import ServerError, ToolCallError, ToolInputError
from heron.core.names import PROFILES
from heron.errors import ConfigError
from heron.tools import NameCodec, ToolRegistry, ToolRouter
from heron.tools.mcp_client import MCPClient, ServerConfig, expand, parse_config

ENTITIES = [
    "contact", "company", "deal", "invoice", "payment", "ticket", "project", "task",
    "calendar", "email", "document", "note", "product", "order", "employee",
]  # fmt: skip
VERBS = ["list", "get", "create", "update", "delete", "search", "archive", "restore",
         "export", "import"]  # fmt: skip
PAGE = 50
HERE = Path(__file__)


def serve(mode: str, port: int = 0) -> None:
    """The test server: 150 tools named ``osis.<entity>.<verb>``, listed 50 per page."""
    if mode == "hang":
        time.sleep(3600)
    if mode == "exit":
        sys.exit(3)
    if mode == "garbage":
        for _ in sys.stdin:
            print("{this is not json", flush=True)
        return
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ListToolsResult

    class PagedServer(MCPServer):
        async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
            tools = await self.list_tools()
            start = int(params.cursor) if params is not None and params.cursor else 0
            more = start + PAGE < len(tools)
            return ListToolsResult(
                tools=tools[start : start + PAGE], next_cursor=str(start + PAGE) if more else None
            )

    server = PagedServer("osis")
    for entity in ENTITIES:
        for verb in VERBS:
            name = f"osis.{entity}.{verb}"
            description = f"{verb.title()} {entity} records in OSIS."
            server.add_tool(_echo(name), name=name, description=description)
    if mode == "http":
        import anyio

        anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=port))
    elif mode == "sse":  # the SDK's legacy HTTP+SSE transport alone: GET /sse, POST /messages/
        import anyio

        anyio.run(lambda: server.run_sse_async(host="127.0.0.1", port=port))
    else:
        server.run("stdio")


def _echo(name: str) -> Any:
    def fn(query: str = "", limit: int = 10) -> str:
        if query == "fail":
            from mcp.server.mcpserver.exceptions import ToolError

            raise ToolError("asked to fail")
        return json.dumps({"tool": name, "query": query, "limit": limit})

    return fn


def stdio(name: str, mode: str, timeout: float = 20.0) -> ServerConfig:
    return ServerConfig(name, command=sys.executable, args=(str(HERE), mode), timeout=timeout)


def _served(mode: str, path: str) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(HERE), mode, str(port)])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from _served("http", "/mcp")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    yield from _served("sse", "/sse")


@pytest.fixture(scope="module")
def stdio_registry() -> tuple[MCPClient, ToolRegistry, list[Any]]:
    client = MCPClient([stdio("osis", "serve")])
    registry = ToolRegistry()
    return client, registry, client.discover(registry)


def test_stdio_lists_all_pages_and_calls_back(stdio_registry) -> None:
    _, registry, statuses = stdio_registry
    assert [s.to_dict() for s in statuses] == [
        {"name": "osis", "transport": "stdio", "tools": 150, "error": None, "warnings": []}
    ]
    assert len(registry) == 150 and "osis.contact.list" in registry
    tool = registry.get("osis.contact.list")
    assert tool.source == "mcp:osis" and "query" in tool.parameters["properties"]
    result = registry.call("osis.deal.create", {"query": "acme", "limit": 3})
    assert json.loads(result["content"][0]["text"]) == {
        "tool": "osis.deal.create", "query": "acme", "limit": 3,
    }  # fmt: skip


def test_tool_errors_come_back_as_tool_call_errors(stdio_registry) -> None:
    _, registry, _ = stdio_registry
    with pytest.raises(ToolCallError, match="asked to fail"):
        registry.call("osis.note.get", {"query": "fail"})


@pytest.mark.parametrize("profile", list(PROFILES))
def test_routed_payload_is_valid_and_calls_route_back(stdio_registry, store, profile) -> None:
    _, registry, _ = stdio_registry
    router = ToolRouter(registry.tools(), store, profile=profile, mode="pattern")
    route = router.route("create an invoice for a customer")
    limit = PROFILES[profile].max_tools
    assert len(route.tools) == (min(limit, 150) if limit else 150)
    if limit and limit < 150:
        assert route.mode == "hybrid" and "exceed" in route.warnings[0]
    payload = route.payload()
    names = [p["function"]["name"] if "function" in p else p["name"] for p in payload]
    assert len(set(names)) == len(names)
    assert all(PROFILES[profile].valid(n) for n in names)
    encoded = router.codec.encode("osis.invoice.create")
    tool = router.decode(encoded)
    result = registry.call(tool.name, {"query": "x"}) if profile == "strict" else None
    if result is not None:
        assert json.loads(result["content"][0]["text"])["tool"] == "osis.invoice.create"


def test_semantic_route_picks_a_small_relevant_subset(stdio_registry, store) -> None:
    _, registry, _ = stdio_registry
    router = ToolRouter(registry.tools(), store, profile="openai")
    route = router.route("create a new invoice")
    assert 0 < len(route.tools) <= 10
    assert "osis.invoice.create" in [t.tool.name for t in route.tools[:3]]


def test_streamable_http(http_url: str) -> None:
    client = MCPClient([ServerConfig("web", url=http_url, timeout=20)])
    registry = ToolRegistry()
    (status,) = client.discover(registry)
    assert status.error is None and status.tools == 150
    # The server is "web": its tools carry its name, and are called by their own.
    codec = NameCodec([t.name for t in registry.tools()], "openai")
    tool = codec.decode(codec.encode("web.osis.ticket.search"))
    result = registry.call(tool, {"query": "printer"})
    assert json.loads(result["content"][0]["text"]) == {
        "tool": "osis.ticket.search", "query": "printer", "limit": 10,
    }  # fmt: skip


def test_broken_servers_are_reported_and_skipped(stdio_registry) -> None:
    client = MCPClient(
        [
            stdio("hang", "hang", timeout=2),
            stdio("exit", "exit", timeout=10),
            stdio("garbage", "garbage", timeout=2),
            ServerConfig("down", url="http://127.0.0.1:9/mcp", timeout=3),
            stdio("osis", "serve"),
        ]
    )
    registry = ToolRegistry()
    statuses = {s.name: s for s in client.discover(registry)}
    assert "did not list its tools within 2 s" in (statuses["hang"].error or "")
    for name in ("exit", "garbage", "down"):
        assert statuses[name].error and statuses[name].tools == 0, name
    assert statuses["osis"].error is None and len(registry) == 150


def test_a_failed_server_is_reached_again_on_next_use(tmp_path: Path) -> None:
    flag = tmp_path / "mode"
    flag.write_text("exit")
    script = tmp_path / "flaky.py"
    script.write_text(
        "import sys, runpy\n"
        f"mode = open({str(flag)!r}).read()\n"
        f"sys.argv = [{str(HERE)!r}, mode]\n"
        f"runpy.run_path({str(HERE)!r}, run_name='__main__')\n"
    )
    client = MCPClient([ServerConfig("flaky", command=sys.executable, args=(str(script),))])
    with pytest.raises(ServerError, match="flaky"):
        client.list_tools("flaky")
    flag.write_text("serve")
    assert len(client.list_tools("flaky")) == 150


def test_config_expands_variables() -> None:
    config = {
        "mcpServers": {
            "a": {"command": "${PY}", "args": ["${DIR:-/srv}/x"], "env": {"T": "${TOKEN}"}},
            "b": {"url": "http://${HOST:-127.0.0.1}:${PORT}/mcp", "timeout": 5},
        }
    }
    a, b = parse_config(config, {"PY": "python3", "TOKEN": "t", "PORT": "80"})
    assert (a.command, a.args, a.env, a.transport) == ("python3", ("/srv/x",), {"T": "t"}, "stdio")
    assert (b.url, b.timeout, b.transport) == ("http://127.0.0.1:80/mcp", 5.0, "streamable-http")
    with pytest.raises(ToolInputError, match=r"export TOKEN, or write \$\{TOKEN:-default\}"):
        expand("${TOKEN}", {})
    with pytest.raises(ConfigError, match="needs 'command'"):
        parse_config({"mcpServers": {"x": {}}}, {})
    with pytest.raises(ConfigError, match=r"server 'a': \$\{TOKEN\} is not set"):
        parse_config(config, {"PY": "python3", "PORT": "80"})


def test_legacy_sse_server_is_reached_with_type_sse(sse_url: str) -> None:
    document = {"mcpServers": {"old": {"type": "sse", "url": sse_url, "timeout": 20}}}
    (config,) = parse_config(document, {})
    assert config.transport == "sse"
    client = MCPClient([config], keep=True)
    try:
        registry = ToolRegistry()
        (status,) = client.discover(registry)
        assert status.to_dict()["transport"] == "sse" and status.tools == 150
        for query in ("one", "two"):  # the kept session serves the second call too
            result = registry.call("old.osis.deal.get", {"query": query})
            assert json.loads(result["content"][0]["text"])["query"] == query
    finally:
        client.close()
    # The server speaks SSE alone: streamable HTTP (the transport without "type") fails.
    with pytest.raises(ServerError, match="old"):
        MCPClient([ServerConfig("old", url=sse_url, timeout=5)]).list_tools("old")


def test_disabled_servers_are_checked_but_never_started() -> None:
    document = {
        "mcpServers": {
            "on": {"command": "python3"},
            "off": {"command": "${UNSET_BINARY}", "disabled": True},  # not expanded either
            "http": {"type": "http", "url": "http://127.0.0.1:1/mcp", "disabled": False},
        }
    }
    assert [s.name for s in parse_config(document, {})] == ["on", "http"]
    with pytest.raises(ConfigError, match=r"'disabled' is a string .*must be true or false"):
        parse_config({"mcpServers": {"x": {"command": "a", "disabled": "yes"}}}, {})
    with pytest.raises(ConfigError, match=r"\"type\": \"sse\" needs 'url'"):
        parse_config({"mcpServers": {"x": {"command": "a", "type": "sse"}}}, {})
    with pytest.raises(ConfigError, match="'type' must be"):
        parse_config({"mcpServers": {"x": {"url": "http://h/", "type": "websocket"}}}, {})


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
