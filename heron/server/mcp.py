"""Heron's retrieval as an MCP server (the official SDK's low-level ``Server``):
``search_docs``, ``search_skills``, ``read_skill`` and ``route_tools``.

The first three are the built-in tools' own definitions and handlers
(``heron.tools.builtin``), bound to the server's shared store and skill index, so an
MCP client sees exactly the schemas an agent does. Served over streamable HTTP at
``/mcp`` by ``heron serve`` and over stdio by ``heron mcp``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from starlette.concurrency import run_in_threadpool
from starlette.routing import BaseRoute

from heron import __version__
from heron.core.tools import Handler, Tool
from heron.errors import HeronError, InputError
from heron.libraries.tool import docs_tool
from heron.redact import redact
from heron.server.runtime import Runtime
from heron.skills.tool import skill_tools
from heron.tools.router import DEFAULT_TOP_K

ROUTE_TOOLS = Tool(
    "route_tools",
    "Pick the tools worth offering for a request from every tool Heron knows (built-in, "
    "imported, MCP servers): each with its score and why it was kept or dropped.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The request to find tools for."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 128, "default": DEFAULT_TOP_K},
            "profile": {
                "type": "string",
                "description": "Provider naming rules: strict, openai, anthropic or gemini.",
                "default": "strict",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    tags=("tools",),
)

log = logging.getLogger("heron.server")

INSTRUCTIONS = (
    "Heron searches indexed documentation (search_docs, with citations), finds and reads "
    "skills (search_skills, read_skill) and picks tools for a request (route_tools)."
)


def heron_tools(rt: Runtime) -> dict[str, tuple[Tool, Handler]]:
    """The tools this server offers, by name, with handlers on ``rt``'s resources."""

    def route(a: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(a.get("query"), str) or not a["query"].strip():
            raise InputError("route_tools needs a non-empty 'query' string.")
        router = rt.router(profile=a.get("profile", "strict"))
        return router.route(a["query"], top_k=int(a.get("top_k", DEFAULT_TOP_K))).to_dict()

    pairs = [docs_tool(rt.docs_tool), *skill_tools(lambda: rt.skills), (ROUTE_TOOLS, route)]
    return {tool.name: (tool, handler) for tool, handler in pairs}


def _result(value: Any, *, error: bool = False) -> types.CallToolResult:
    """A tool's answer; ``error``: an MCP tool error (``isError: true``), whose text is
    the message for the model, redacted."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = redact(text) if error else text
    structured = None if error else value if isinstance(value, dict) else {"results": value}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


def _annotations(tool: Tool) -> types.ToolAnnotations:
    """Heron's safety level as MCP hints, so clients need not assume the worst."""
    return types.ToolAnnotations(
        read_only_hint=tool.safety == "read",
        destructive_hint=tool.safety == "execute",
        open_world_hint=False,
    )


def build_server(rt: Runtime) -> Server[Any]:
    tools = heron_tools(rt)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.parameters,
                    annotations=_annotations(t),
                )
                for t, _ in tools.values()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in tools:
            return _result(f"No tool {params.name!r}. Tools: {', '.join(tools)}.", error=True)
        _, handler = tools[params.name]
        try:
            value = await run_in_threadpool(handler, dict(params.arguments or {}))
        except HeronError as exc:  # the model reads the message and can retry
            return _result(str(exc), error=True)
        except Exception as exc:
            # Left to the SDK, this would be a JSON-RPC error with code 0 and the raw
            # exception text (str(KeyError('x')) is "'x'"): answer a clean tool error.
            log.exception("MCP tool %s failed", params.name)
            return _result(
                f"{params.name} failed unexpectedly ({type(exc).__name__}); the server log "
                "has the details.",
                error=True,
            )
        return _result(value)

    return Server(
        "heron",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def http_routes(server: Server[Any], *, max_body: int) -> list[BaseRoute]:
    """The ``/mcp`` route; the app must run ``server.session_manager.run()`` in its
    lifespan. Host and Origin are checked for every route, this one included, by
    ``heron.server.origins.HostOriginMiddleware``, so the SDK's own copy of that check is
    off (one rule in one place; the SDK's loopback default would also let a page on any
    localhost port in). The SDK still insists on a JSON content type; its body limit is
    the server's."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", transport_security=security, max_request_body_size=max_body
    )
    return list(app.routes)


def serve_stdio(rt: Runtime) -> None:
    """Serve MCP on stdin/stdout until the client closes them (``heron mcp``)."""
    server = build_server(rt)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
