"""The MCP server through the official SDK's client: streamable HTTP at ``/mcp`` and
``heron mcp`` over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from heron.libraries.tool import SEARCH_DOCS
from tests.server.conftest import Served, heron_env

TOOLS = ["read_skill", "route_tools", "search_docs", "search_skills"]
ROOT = Path(__file__).parents[2]


async def exercise(server: Any) -> dict[str, Any]:
    async with Client(server) as client:
        listed = await client.list_tools()
        docs = await client.call_tool("search_docs", {"query": "undo a rollout", "top_k": 2})
        skill = await client.call_tool("read_skill", {"name": "rollback-deployment"})
        routed = await client.call_tool("route_tools", {"query": "read a skill", "top_k": 2})
        bad = await client.call_tool("search_docs", {"query": "x", "library": "nope"})
    return {"tools": listed.tools, "docs": docs, "skill": skill, "routed": routed, "bad": bad}


def check(seen: dict[str, Any]) -> None:
    tools = {t.name: t for t in seen["tools"]}
    assert sorted(tools) == TOOLS
    assert tools["search_docs"].input_schema == SEARCH_DOCS["input_schema"]
    assert tools["read_skill"].input_schema["required"] == ["name"]
    docs = seen["docs"]
    assert not docs.is_error
    assert docs.structured_content["results"][0]["citation"] == "(tiny, tasks/rollback)"
    assert json.loads(docs.content[0].text) == docs.structured_content["results"]
    assert "kubectl rollout undo" in seen["skill"].structured_content["body"]
    assert seen["routed"].structured_content["results"][0]["name"] == "read_skill"
    bad = seen["bad"]
    assert bad.is_error and "nope" in bad.content[0].text


def test_mcp_over_streamable_http(served: Served) -> None:
    check(anyio.run(exercise, f"{served.url}/mcp"))


def test_mcp_over_stdio(heron_home: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "heron", "mcp"],
        env=heron_env(heron_home),
        cwd=ROOT,
    )
    check(anyio.run(exercise, params))
