"""Heron's retrieval as an MCP server (the official SDK's low-level ``Server``).

- **Tools** ``search_docs``, ``search_skills``, ``read_skill`` and ``route_tools``. The
  first three are the built-in tools' own definitions and handlers, bound to the
  server's shared store and skill index, so an MCP client sees exactly the input schemas
  an agent does. Each has a ``title``, all four hints (``TOOL_TRAITS``) and an
  ``outputSchema`` its ``structuredContent`` follows; a search's results also come as
  ``resource_link`` items a client can open.
- **Resources**: every indexed library page, ``heron://library/{library}/{page}`` (the
  page's file as it is now; ``heron://library/kubernetes/concepts/storage/volumes``,
  its ``/`` written as is or as ``%2F``), and every skill, ``heron://skill/{name}``.
- **Prompts**: every skill, its instructions with the task the user gives.

Served over streamable HTTP at ``/mcp`` by ``heron serve`` and over stdio by ``heron mcp``.
"""

from __future__ import annotations

import json
import logging
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from starlette.concurrency import run_in_threadpool
from starlette.routing import BaseRoute

from heron import __version__
from heron.agent.wiring import retrieval_tools
from heron.core.tools import Handler, Tool
from heron.errors import HeronError, InputError, NotFound
from heron.libraries.config import read_libraries
from heron.libraries.library import read_page
from heron.libraries.state import library_state
from heron.redact import redact
from heron.server.hooks import no_methods
from heron.server.numbers import whole
from heron.server.runtime import Runtime
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
    "Heron searches indexed documentation (search_docs, with citations and links to the "
    "pages, which are resources), finds and reads skills (search_skills, read_skill; also "
    "resources and prompts) and picks tools for a request (route_tools)."
)
LIBRARY_PAGE = "heron://library/{library}/{page}"
SKILL = "heron://skill/{name}"
MARKDOWN = "text/markdown"
#: Resources listed per ``resources/list`` answer; the cursor is the next offset.
PAGE_SIZE = 500


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_STR, _NUM, _INT = {"type": "string"}, {"type": "number"}, {"type": "integer"}
_HIT = _object(
    ["library", "page", "title", "citation", "source", "score"],
    library=_STR,
    collection=_STR,
    page=_STR,
    title=_STR,
    heading=_STR,
    anchor=_STR,
    snippet=_STR,
    score=_NUM,
    citation=_STR,
    source=_STR,
    lines=_array(_INT),
)
_SKILL_HIT = _object(
    ["name", "description", "score"], name=_STR, description=_STR, score=_NUM, path=_STR
)
_ROUTED = _object(["name", "score", "kept"], name=_STR, score=_NUM, kept={"type": "boolean"})


@dataclass(frozen=True)
class Traits:
    """What an MCP client shows of a tool (``title``) and the shape of its
    ``structuredContent`` (``output``, its ``outputSchema``)."""

    title: str
    output: dict[str, Any]


TOOL_TRAITS = {
    "search_docs": Traits("Search documentation", _object(["results"], results=_array(_HIT))),
    "search_skills": Traits("Find skills", _object(["results"], results=_array(_SKILL_HIT))),
    "read_skill": Traits(
        "Read a skill",
        _object(["name", "description", "body"], name=_STR, description=_STR, path=_STR, body=_STR),
    ),
    "route_tools": Traits(
        "Pick tools for a request",
        _object(
            ["query", "results", "dropped"],
            query=_STR,
            mode=_STR,
            profile=_STR,
            warnings=_array(_STR),
            results=_array(_ROUTED),
            dropped=_array(_ROUTED),
        ),
    ),
}


def heron_tools(rt: Runtime) -> dict[str, tuple[Tool, Handler]]:
    """The tools this server offers, by name, with handlers on ``rt``'s resources."""

    def route(a: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(a.get("query"), str) or not a["query"].strip():
            raise InputError("route_tools needs a non-empty 'query' string.")
        router = rt.router(profile=a.get("profile", "strict"))
        return router.route(a["query"], top_k=int(a.get("top_k", DEFAULT_TOP_K))).to_dict()

    pairs = [
        *retrieval_tools(rt.settings, lambda: rt.store, lambda: rt.skills),
        (ROUTE_TOOLS, route),
    ]
    return {tool.name: (tool, handler) for tool, handler in pairs}


def page_uri(library: str, page: str) -> str:
    """``heron://library/k8s/concepts/pods``: the page's ``/`` kept, anything else that a
    URI cannot hold escaped."""
    return f"heron://library/{library}/{quote(page, safe='/')}"


def skill_uri(name: str) -> str:
    return f"heron://skill/{quote(name, safe='')}"


def _links(tool: str, value: Any) -> list[types.ResourceLink]:
    """The resources a result names: each cited page, each skill found."""
    if tool == "search_docs":
        return [
            types.ResourceLink(
                type="resource_link",
                uri=page_uri(r["library"], r["page"]),
                name=r["citation"],
                title=" > ".join(t for t in (r.get("title"), r.get("heading")) if t),
                description=r.get("snippet") or None,
                mime_type=MARKDOWN,
            )
            for r in value
        ]
    if tool == "search_skills":
        return [
            types.ResourceLink(
                type="resource_link",
                uri=skill_uri(h["name"]),
                name=h["name"],
                description=h.get("description") or None,
                mime_type=MARKDOWN,
            )
            for h in value
        ]
    return []


def _result(value: Any, *, error: bool = False, tool: str = "") -> types.CallToolResult:
    """A tool's answer; ``error``: an MCP tool error (``isError: true``), whose text is
    the message for the model, redacted. The JSON text comes first, for clients that read
    only text; then a ``resource_link`` per page or skill the answer names."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = redact(text) if error else text
    structured = None if error else value if isinstance(value, dict) else {"results": value}
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(
        content=content if error else [*content, *_links(tool, value)],
        structured_content=structured,
        is_error=error,
    )


def _annotations(tool: Tool) -> types.ToolAnnotations:
    """Heron's safety level as MCP hints, so clients need not assume the worst: a read
    changes nothing, so repeating it is idempotent; every tool here reads Heron's own
    indexes, never the outside world."""
    return types.ToolAnnotations(
        title=TOOL_TRAITS[tool.name].title,
        read_only_hint=tool.safety == "read",
        destructive_hint=tool.safety == "execute",
        idempotent_hint=tool.safety == "read",
        open_world_hint=False,
    )


def _refused(exc: HeronError) -> MCPError:
    """A resource or prompt that cannot be given: its message, redacted, as the
    JSON-RPC error (invalid params: the name or URI asked for)."""
    return MCPError(INVALID_PARAMS, redact(str(exc)))


class Catalog:
    """Library pages and skills as MCP resources and skills as prompts, read from
    ``rt``'s store and skill index on each request, so they follow re-indexing."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def resources(self) -> list[types.Resource]:
        skills = [
            types.Resource(
                uri=skill_uri(s.name),
                name=s.name,
                title=f"Skill: {s.name}",
                description=s.description,
                mime_type=MARKDOWN,
            )
            for s in self.rt.skills.scan().skills
        ]
        indexed = {info.name for info in self.rt.store.namespaces()}
        pages = [
            types.Resource(
                uri=page_uri(lib.name, page), name=f"{lib.name}/{page}", mime_type=MARKDOWN
            )
            for lib in read_libraries(self.rt.settings)
            if lib.name in indexed
            for page in sorted(library_state(self.rt.store, lib.name).pages)
        ]
        return skills + pages

    def read(self, uri: str) -> types.TextResourceContents:
        if uri.startswith("heron://skill/"):
            skill = self.rt.skills.show(unquote(uri.removeprefix("heron://skill/")))
            return types.TextResourceContents(uri=uri, mime_type=MARKDOWN, text=skill.body)
        library, slash, page = uri.removeprefix("heron://library/").partition("/")
        if not uri.startswith("heron://library/") or not slash or not page:
            raise NotFound(
                f"No resource {uri!r}: Heron serves {LIBRARY_PAGE} and {SKILL}; "
                "resources/list names them."
            )
        found = read_page(library, unquote(page), self.rt.store, self.rt.settings)
        return types.TextResourceContents(uri=uri, mime_type=MARKDOWN, text=found.text)

    def prompts(self) -> list[types.Prompt]:
        task = types.PromptArgument(
            name="task", description="What to do with this skill.", required=False
        )
        return [
            types.Prompt(
                name=s.name, title=f"Skill: {s.name}", description=s.description, arguments=[task]
            )
            for s in self.rt.skills.scan().skills
        ]

    def prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        skill = self.rt.skills.show(name)
        text = f"Follow the skill {skill.name!r}: {skill.description}\n\n{skill.body}"
        if task := (arguments.get("task") or "").strip():
            text += f"\n\nThe task: {task}"
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=text)
        )
        return types.GetPromptResult(description=skill.description, messages=[message])


def build_server(rt: Runtime) -> Server[Any]:
    tools = heron_tools(rt)
    catalog = Catalog(rt)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    title=TOOL_TRAITS[t.name].title,
                    description=t.description,
                    input_schema=t.parameters,
                    output_schema=TOOL_TRAITS[t.name].output,
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
        return _result(value, tool=params.name)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        listed = await run_in_threadpool(catalog.resources)
        cursor = params.cursor if params else None
        try:
            start = whole(cursor, "cursor", high=len(listed)) if cursor else 0
        except InputError as exc:
            raise _refused(exc) from exc
        more = start + PAGE_SIZE < len(listed)
        return types.ListResourcesResult(
            resources=listed[start : start + PAGE_SIZE],
            next_cursor=str(start + PAGE_SIZE) if more else None,
        )

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=LIBRARY_PAGE,
                    name="library-page",
                    title="Library page",
                    description="A page of an indexed library, as its file is now; page is "
                    "its id, as search_docs gives it (concepts/storage/volumes).",
                    mime_type=MARKDOWN,
                ),
                types.ResourceTemplate(
                    uri_template=SKILL,
                    name="skill",
                    title="Skill",
                    description="A skill's instructions, by name.",
                    mime_type=MARKDOWN,
                ),
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = await run_in_threadpool(catalog.read, str(params.uri))
        except HeronError as exc:
            raise _refused(exc) from None
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await run_in_threadpool(catalog.prompts))

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        try:
            return await run_in_threadpool(catalog.prompt, params.name, params.arguments or {})
        except HeronError as exc:
            raise _refused(exc) from None

    return Server(
        "heron",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
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


# -- the feature hooks (heron.server.hooks) ----------------------------------------------


def server_of(rt: Runtime) -> Server[Any]:
    """The server's one MCP server, its routes and its lifespan sharing it."""
    return rt.shared("mcp", lambda: build_server(rt))


register = no_methods


def routes(rt: Runtime) -> list[BaseRoute]:
    return http_routes(server_of(rt), max_body=rt.settings.server_max_body)


def lifespan(rt: Runtime) -> AbstractAsyncContextManager[None]:
    return server_of(rt).session_manager.run()
