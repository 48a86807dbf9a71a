"""One MCP endpoint per service (issue 50): ``/mcp/{server}`` serves one configured
server's tools through the real ``mcp`` SDK client, with the same keys and tool ceiling
as ``/mcp``; an OpenRPC service (a real JSON-RPC server on loopback answering
``rpc.discover``) becomes MCP tools with its methods' schemas; a server the context does
not configure is a 404."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from heron.keys import open_keys
from heron.server import create_app
from heron.server.doors.rpc import FORBIDDEN
from heron.settings import Settings
from heron.tools.mcp_client import MCPClient, parse_config
from heron.tools.registry import ToolRegistry
from tests.server.conftest import Served, running

#: An OpenRPC service's document, as ``rpc.discover`` answers it.
DOCUMENT = {
    "openrpc": "1.3.2",
    "info": {"title": "calc", "version": "1.0.0"},
    "methods": [
        {
            "name": "add",
            "summary": "Add two numbers.",
            "x-safety": "read",
            "params": [
                {"name": "a", "schema": {"$ref": "#/components/schemas/Number"}, "required": True},
                {"name": "b", "schema": {"type": "integer"}, "required": True},
            ],
            "result": {"name": "sum", "schema": {"type": "integer"}},
        },
        {
            "name": "describe",
            "description": "Say what a number is.",
            "x-mcp-annotations": {"readOnlyHint": True},
            "params": [{"name": "n", "schema": {"type": "integer"}, "description": "A number."}],
            "result": {"name": "about", "schema": {"type": "object"}},
        },
        {"name": "wipe", "summary": "Delete everything.", "params": []},
    ],
    "components": {"schemas": {"Number": {"type": "integer", "minimum": 0}}},
}


class Calc(BaseHTTPRequestHandler):
    calls: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, params = request["method"], request.get("params") or {}
        Calc.calls.append(method)
        if method == "rpc.discover":
            answer: dict[str, Any] = {"result": DOCUMENT}
        elif method == "add" and isinstance(params.get("a"), int):
            answer = {"result": params["a"] + params["b"]}
        elif method == "describe":
            answer = {"result": {"n": params["n"], "even": params["n"] % 2 == 0}}
        else:
            answer = {"error": {"code": -32602, "message": f"bad call of {method}"}}
        body = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), **answer}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def calc() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Calc)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/rpc"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def served(heron_home: Path, calc: str, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("services")
    (tmp / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": {"openrpc": calc}}}))
    (tmp / "ops.json").write_text(json.dumps({"mcpServers": {}}))
    settings = Settings(
        tools={"mcp_config": tmp / "mcp.json"},
        contexts={"ops": {"mcp_config": str(tmp / "ops.json")}},
    )
    with running(create_app(settings)) as (url, server):
        yield Served(url, heron_home / "home", settings, server)


def session(served: Served, path: str, work: Any, token: str | None = None) -> Any:
    """``work(client)`` on an MCP client of ``path``, through the SDK."""

    async def main() -> Any:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        async with http, Client(streamable_http_client(served.url + path, http_client=http)) as c:
            return await work(c)

    return anyio.run(main)


def test_an_openrpc_document_is_tools_with_its_schemas(calc: str) -> None:
    (config,) = parse_config({"mcpServers": {"calc": {"openrpc": calc}}}, {})
    assert config.transport == "openrpc"
    registry = ToolRegistry()
    (status,) = MCPClient([config]).discover(registry)
    assert status.error is None and status.tools == 3
    add = registry.get("calc.add")
    assert add.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }  # the $ref resolved
    assert (add.safety, registry.get("calc.describe").safety) == ("read", "read")
    assert registry.get("calc.wipe").safety == "execute"  # unannotated: the worst
    assert registry.call("calc.add", {"a": 2, "b": 3})["content"][0]["text"] == "5"


def test_mcp_server_path_serves_that_service_alone_within_the_ceiling(
    served: Served, calc: str
) -> None:
    async def work(c: Any) -> Any:
        listed = await c.list_tools()
        added = await c.call_tool("add", {"a": 2, "b": 40})
        described = await c.call_tool("describe", {"n": 7})
        wiped = await c.call_tool("wipe", {})
        wrong = await c.call_tool("add", {"a": "two", "b": 1})
        return listed, added, described, wiped, wrong

    Calc.calls.clear()
    listed, added, described, wiped, wrong = session(served, "/mcp/calc", work)
    tools = {t.name: t for t in listed.tools}
    assert sorted(tools) == ["add", "describe"]  # wipe is execute: over HERON_MCP_TOOL_SAFETY
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["add"].annotations.read_only_hint is True
    assert not added.is_error and added.content[0].text == "42"
    assert described.structured_content == {"n": 7, "even": False}
    assert wiped.is_error and "No tool 'wipe' on 'calc'" in wiped.content[0].text
    assert wrong.is_error and "'a'" in wrong.content[0].text  # checked against the schema
    assert "wipe" not in Calc.calls  # never sent


def test_keys_and_contexts_hold_at_each_service(served: Served) -> None:
    with open_keys(served.settings) as keys:
        reader = keys.create("svc-reader", ("read",))[1]
        tooler = keys.create("svc-tools", ("tools",))[1]

    async def names(c: Any) -> list[str] | str:
        try:
            return [t.name for t in (await c.list_tools()).tools]
        except MCPError as exc:  # the server's refusal, as the SDK raises it
            return f"{exc.code}: {exc}"

    assert session(served, "/mcp/calc", names, tooler) == ["add", "describe"]
    refused = session(served, "/mcp/calc", names, reader)
    assert refused.startswith(f"{FORBIDDEN}: forbidden: needs scope tools")
    with httpx.Client(base_url=served.url, timeout=30) as http:
        missing = http.post("/mcp/nope", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert missing.status_code == 404 and "No MCP server 'nope'" in missing.text
        ops = http.post(
            "/mcp/calc",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"X-Heron-Context": "ops"},
        )
        assert ops.status_code == 404  # ops has its own mcp.json, without calc
        foreign = http.post(
            "/mcp/calc",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        )
        assert foreign.status_code == 403  # the Origin rule of /mcp
