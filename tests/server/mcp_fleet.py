"""A fleet of MCP servers behind Heron, and a client that reaches them through Heron alone
(issue 30, "one MCP door").

Run as a program (``python mcp_fleet.py N``), this is MCP server ``N`` of ``SERVERS``:
``PER_SERVER`` MetaTool tools (``shared/data/tools/metatool``: a name and its plugin's
description each), every one read-only and answering with its own name and the query,
over stdio with the official SDK's low-level server.

``door(home)`` is the client's side: the mcp SDK's client connected only to ``heron mcp``
(whose ``mcp.json`` names the fleet) sends each of ``requests()`` (MetaTool queries for
tools of the fleet, one per tool, evenly spread) to ``find_tools`` and runs the gold tool
with ``call_tool``. It reports where the gold tool was found and the tokens of tool
schemas the client held: Heron's ``tools/list`` plus what ``find_tools`` returned, against
every server's ``tools/list`` when connected to each directly.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVERS = 3
PER_SERVER = 50
REQUESTS = 20
TOP_K = 5
SHARED = Path(os.environ.get("HERON_SHARED") or Path(__file__).parents[2] / ".." / "shared")
METATOOL = SHARED / "data" / "tools" / "metatool"
HERE = Path(__file__).resolve()


def fleet() -> list[list[tuple[str, str]]]:
    """``SERVERS`` lists of ``PER_SERVER`` (name, description): MetaTool's tools in order."""
    tools = list(json.loads((METATOOL / "plugin_des.json").read_text(encoding="utf-8")).items())
    return [tools[i * PER_SERVER : (i + 1) * PER_SERVER] for i in range(SERVERS)]


def server_name(index: int) -> str:
    return f"fleet{index}"


def requests() -> list[tuple[str, str]]:
    """``REQUESTS`` (query, gold tool as Heron names it): the first MetaTool query of
    every ``len(tools) // REQUESTS``-th tool of the fleet."""
    where = {name: server_name(i) for i, tools in enumerate(fleet()) for name, _ in tools}
    first: dict[str, str] = {}
    with open(METATOOL / "all_clean_data.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["Tool"] in where:
                first.setdefault(row["Tool"], row["Query"])
    names = [n for n in where if n in first]
    step = len(names) // REQUESTS
    return [(first[n], f"{where[n]}.{n}") for n in names[::step][:REQUESTS]]


def tokens(value: Any) -> int:
    """Tokens of ``value`` as JSON, by Heron's own estimate (``heron.llm.payload``)."""
    from heron.llm.payload import CHARS_PER_TOKEN

    return round(len(json.dumps(value, ensure_ascii=False)) / CHARS_PER_TOKEN)


def mcp_config(path: Path) -> Path:
    servers = {
        server_name(i): {"command": sys.executable, "args": [str(HERE), str(i)]}
        for i in range(SERVERS)
    }
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


@dataclass
class Door:
    """What one run through Heron's door saw."""

    ranks: list[int | None]  # the gold tool's rank in find_tools' answer (1-based)
    called: int  # call_tool answers that came from the gold tool
    held_tokens: int  # Heron's tools/list + the largest find_tools answer
    direct_tokens: int  # every fleet server's tools/list
    heron_tools: int
    direct_tools: int

    @property
    def found_first_call(self) -> float:
        return sum(r is not None for r in self.ranks) / len(self.ranks)

    @property
    def found_at_1(self) -> float:
        return sum(r == 1 for r in self.ranks) / len(self.ranks)


async def direct_listing() -> list[dict[str, Any]]:
    """Every fleet server's tools, as a client connected to each directly holds them."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    listed: list[dict[str, Any]] = []
    for i in range(SERVERS):
        params = StdioServerParameters(command=sys.executable, args=[str(HERE), str(i)])
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
        listed += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return listed


async def door(env: dict[str, str], cwd: Path) -> Door:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "heron", "mcp"], env=env, cwd=cwd
    )
    ranks: list[int | None] = []
    called = largest = 0
    async with Client(params) as client:
        listed = (await client.list_tools()).tools
        heron = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
        for query, gold in requests():
            found = await client.call_tool("find_tools", {"query": query, "top_k": TOP_K})
            assert not found.is_error, found.content[0].text
            tools = found.structured_content["tools"]
            largest = max(largest, tokens(tools))
            names = [t["name"] for t in tools]
            ranks.append(names.index(gold) + 1 if gold in names else None)
            ran = await client.call_tool("call_tool", {"name": gold, "arguments": {"query": query}})
            result = ran.structured_content["result"] if not ran.is_error else None
            called += isinstance(result, str) and result.startswith(f"{gold.split('.', 1)[1]}:")
    direct = await direct_listing()
    return Door(ranks, called, tokens(heron) + largest, tokens(direct), len(heron), len(direct))


def serve(index: int) -> None:
    """MCP server ``index`` of the fleet on stdio."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    tools = fleet()[index]
    listed = [
        types.Tool(
            name=name,
            description=description,
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "The request."}},
                "required": ["query"],
            },
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )
        for name, description in tools
    ]
    known = {name for name, _ in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in known:
            text, error = f"no tool {params.name}", True
        else:
            text, error = f"{params.name}: {(params.arguments or {}).get('query', '')}", False
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=error
        )

    server = Server(server_name(index), on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
