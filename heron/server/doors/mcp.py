"""Heron as an MCP server (the official SDK's low-level ``Server``): one door to every
tool Heron routes, its retrieval, its agent and its actions.

- **Retrieval tools** ``search_docs``, ``search_skills`` and ``read_skill``: the built-in
  tools' own definitions and handlers, bound to the server's shared store and skill
  index, so an MCP client sees exactly the input schemas an agent does.
- **The tool door** ``find_tools`` and ``call_tool``: a client connected to Heron alone
  reaches every tool Heron routes (its MCP servers', imported and built-in ones) while
  holding two schemas, not hundreds: ``find_tools`` routes a request and returns the
  best few with their input schemas, ``call_tool`` runs one by name.
- **Methods as tools**: ``ask`` (``agent.chat``), ``jobs_*`` and ``interventions_*``,
  the JSON-RPC methods themselves (each feature declares beside its method the tool it
  is offered as: ``tool=McpTool(...)``, ``heron.server.doors.rpc``), their params'
  schemas as input schemas, so the two interfaces cannot drift.
- **Safety**: a client runs nothing above ``mcp_tool_safety`` (``HERON_MCP_TOOL_SAFETY``,
  default ``read``; ``heron.tools.ceiling``, the one rule of every door): tools above it
  are neither listed nor found, ``call_tool`` refuses them by name, and the agent ``ask``
  runs is held to it too. Every tool has a ``title`` and all four hints; those with a
  known result shape an ``outputSchema`` their ``structuredContent`` follows; a search's
  results also come as ``resource_link`` items a client can open.
- **Resources**: every indexed library page, ``heron://library/{library}/{page}`` (the
  page's file as it is now; ``heron://library/kubernetes/concepts/storage/volumes``,
  its ``/`` written as is or as ``%2F``), and every skill, ``heron://skill/{name}``.
- **Prompts**: every skill, its instructions with the task the user gives.

Served over streamable HTTP at ``/mcp`` by ``heron serve`` and over stdio by ``heron mcp``.

**One endpoint per service** (``build_service_server``): ``/mcp/{server}`` serves the
tools of one server of the request's context's ``mcp.json`` (an MCP server, or an
OpenRPC service's methods, ``heron.tools.openrpc``) under their own names, as MetaMCP's
per-namespace endpoints do: a client configured with ``http://heron/mcp/osis`` sees
osis' tools and nothing else, through Heron's keys, Host and Origin rules and tool
ceiling, the same as ``/mcp``. A name the context does not configure is a 404. Each
request is its own session (stateless), so a session never moves between services.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
from heron.core.tools import Handler, Safety, Tool
from heron.errors import HeronError, InputError, NotFound
from heron.libraries.config import read_libraries
from heron.libraries.library import read_page
from heron.libraries.state import library_state
from heron.redact import redact
from heron.server.doors.rpc import Method, Registry, RpcError, registry_of
from heron.server.features.keys import acting_as, check_call, key_of, keyring
from heron.server.hooks import NO_METHODS
from heron.server.http.contexts import runtime_of
from heron.server.http.numbers import whole
from heron.server.http.replies import openai_error
from heron.server.runtime import Runtime
from heron.tools.builtin import check_arguments
from heron.tools.ceiling import ceiling, check_tool, through, within
from heron.wiring.tools import retrieval_tools

#: Tools ``find_tools`` returns when not told how many: enough for a request's likely
#: candidates, few enough to keep their schemas out of the way.
FIND_TOP_K = 5
FIND_TOOLS = Tool(
    "find_tools",
    "Find the tools that fit a request among every tool Heron can run (its MCP servers', "
    "imported and built-in tools): the best few, each with its input schema. Run one with "
    "call_tool; ask again when the request changes.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The request to find tools for."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 20, "default": FIND_TOP_K},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    tags=("tools",),
)
CALL_TOOL = Tool(
    "call_tool",
    "Run one tool that find_tools returned, by its name, with arguments that follow its "
    "input schema; returns the tool's result.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, as find_tools gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
    safety="execute",  # what it runs is checked against mcp_tool_safety, tool by tool
    tags=("tools",),
)


log = logging.getLogger("heron.server")

INSTRUCTIONS = (
    "Heron searches indexed documentation (search_docs, with citations and links to the "
    "pages, which are resources), finds and reads skills (search_skills, read_skill; also "
    "resources and prompts), answers questions from them (ask), and is the door to every "
    "other tool: find_tools returns the few that fit a request with their schemas, "
    "call_tool runs one. Jobs and interventions have their own tools."
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
    # A paged document's (a PDF's pages, a deck's slides); null for other formats.
    pages={"type": ["array", "null"], "items": _INT},
)
_SKILL_HIT = _object(
    ["name", "description", "score"], name=_STR, description=_STR, score=_NUM, path=_STR
)
_FOUND = _object(
    ["name", "description", "input_schema", "safety", "source", "score"],
    name=_STR,
    description=_STR,
    input_schema={"type": "object"},
    safety=_STR,
    source=_STR,
    score=_NUM,
)


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
    "find_tools": Traits(
        "Find tools for a request", _object(["query", "tools"], query=_STR, tools=_array(_FOUND))
    ),
    "call_tool": Traits("Run a tool", _object(["name", "result"], name=_STR, result={})),
}


def heron_tools(rt: Runtime) -> dict[str, tuple[Tool, Handler]]:
    """The tools this server runs itself, by name, with handlers on ``rt``'s resources."""
    most = ceiling(rt.settings, "mcp")

    def runnable(tool: Tool) -> bool:
        return within(tool.safety, most) and rt.toolbox.registry.runnable(tool.name)

    def find(a: dict[str, Any]) -> dict[str, Any]:
        query = a.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InputError("find_tools needs a non-empty 'query' string.")
        top_k = a.get("top_k", FIND_TOP_K)
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 20:
            raise InputError("find_tools' top_k is a whole number from 1 to 20.")
        # Routed among what this client may run: a tool it could not call is no answer.
        found = rt.router().route(query, top_k=len(rt.toolbox.registry.tools())).tools
        tools = [r for r in found if runnable(r.tool)][:top_k]
        return {
            "query": query,
            "tools": [
                {
                    "name": r.tool.name,
                    "description": r.tool.description,
                    "input_schema": r.tool.parameters,
                    "safety": r.tool.safety,
                    "source": r.tool.source,
                    "score": round(r.score, 4),
                }
                for r in tools
            ],
        }

    def call(a: dict[str, Any]) -> dict[str, Any]:
        name, arguments = a.get("name"), a.get("arguments", {})
        if not isinstance(name, str) or not name:
            raise InputError("call_tool needs the tool's 'name', as find_tools gave it.")
        if not isinstance(arguments, dict):
            raise InputError(f"call_tool's 'arguments' for {name!r} must be a JSON object.")
        registry = rt.toolbox.registry
        tool = registry.get(name)  # UnknownTool names the closest ones
        check_tool(tool, rt.settings, "mcp")
        check_arguments(tool, arguments)
        return {"name": name, "result": _plain(registry.call(name, arguments))}

    pairs = [
        *retrieval_tools(rt.settings, lambda: rt.store, lambda: rt.skills),
        (FIND_TOOLS, find),
        (CALL_TOOL, call),
    ]
    return {tool.name: (tool, handler) for tool, handler in pairs}


def _plain(result: Any) -> Any:
    """An MCP server's answer (``{"content": [...], "structuredContent": ...}``, as
    ``heron.tools.mcp_client`` passes it on) as its structured content, else its text;
    any other tool's result as it is. Its errors were raised already (``ToolCallError``)."""
    if not isinstance(result, dict) or not isinstance(result.get("content"), list):
        return result
    if set(result) - {"content", "structuredContent", "isError"}:
        return result
    if "structuredContent" in result:
        return result["structuredContent"]
    return "\n".join(b["text"] for b in result["content"] if b.get("type") == "text")


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


def _annotations(
    title: str, safety: Safety, *, idempotent: bool | None = None, open_world: bool = False
) -> types.ToolAnnotations:
    """Heron's safety level as MCP hints, so clients need not assume the worst: a read
    changes nothing, so repeating it is idempotent unless said otherwise; only what may
    reach beyond Heron's own indexes (``call_tool``) is open-world."""
    return types.ToolAnnotations(
        title=title,
        read_only_hint=safety == "read",
        destructive_hint=safety == "execute",
        idempotent_hint=safety == "read" if idempotent is None else idempotent,
        open_world_hint=open_world,
    )


def _refused(exc: HeronError) -> MCPError:
    """A resource or prompt that cannot be given: its message, redacted, as the
    JSON-RPC error its ``mcp_code`` says (invalid params: the name or URI asked for; a
    key's refusal: its code on ``/rpc``)."""
    return MCPError(exc.mcp_code, redact(str(exc)))


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


#: The key scope each of Heron's own tools needs (``heron.server.features.keys``); one not listed
#: needs admin, a JSON-RPC method's tool its method's scope. Resources and prompts: read.
READ = "read"
TOOL_SCOPES = {"search_docs": READ, "search_skills": READ, "read_skill": READ,
               "find_tools": "tools", "call_tool": "tools"}  # fmt: skip
ADMIN = "admin"


def offered(registry: Registry, most: Safety) -> dict[str, Method]:
    """The methods of ``registry`` offered as tools, by tool name: those that name one
    (``Method.tool``) within ``most`` (``mcp_tool_safety``), in the registry's order."""
    return {
        m.tool.name: m
        for m in registry.methods.values()
        if m.tool is not None and within(m.tool.safety, most)
    }


def heron_listing(tool: Tool) -> types.Tool:
    """One of Heron's own tools as ``tools/list`` shows it, title, output and hints."""
    traits = TOOL_TRAITS[tool.name]
    hints = _annotations(
        traits.title,
        tool.safety,
        idempotent=None if tool is not CALL_TOOL else False,
        open_world=tool is CALL_TOOL,
    )
    return types.Tool(
        name=tool.name,
        title=traits.title,
        description=tool.description,
        input_schema=tool.parameters,
        output_schema=traits.output,
        annotations=hints,
    )


def method_listing(method: Method) -> types.Tool:
    """A method offered as a tool, as ``tools/list`` shows it: its params' schema."""
    assert method.tool is not None
    spec = method.tool
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=f"{method.summary} (JSON-RPC {method.name})",
        input_schema=method.params.model_json_schema(),
        annotations=_annotations(spec.title, spec.safety, idempotent=spec.idempotent),
    )


#: What ``resources/templates/list`` answers: a library's page, a skill.
TEMPLATES = [
    types.ResourceTemplate(
        uri_template=LIBRARY_PAGE,
        name="library-page",
        title="Library page",
        description="A page of an indexed library, as its file is now; page is its id, as "
        "search_docs gives it (concepts/storage/volumes).",
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


class HeronServer:
    """The handlers of ``build_server``'s MCP server on ``rt``: each answers in the
    request's context (``scoped``) as the request's key (``permit``)."""

    def __init__(self, rt: Runtime, registry: Registry) -> None:
        self.rt = rt
        self.registry = registry
        self.tools = heron_tools(rt)  # the same tools in every context; their handlers differ
        self.methods = offered(registry, ceiling(rt.settings, "mcp"))
        self.listed = [
            *(heron_listing(tool) for tool, _ in self.tools.values()),
            *(method_listing(method) for method in self.methods.values()),
        ]
        self.ring = keyring(rt)
        self.scopes = {name: TOOL_SCOPES.get(name, ADMIN) for name in self.tools}
        self.scopes |= {name: method.scope for name, method in self.methods.items()}

    def scoped(self, ctx: Any) -> Runtime:
        return runtime_of(self.rt, getattr(ctx, "request", None))

    def permit(self, ctx: Any, scope: str) -> None:
        """The caller's key (over HTTP) holds ``scope`` and has room; raises a Heron error."""
        check_call(self.ring, key_of(ctx.request), scope)

    def refuse_unless(self, ctx: Any, scope: str) -> None:
        try:
            self.permit(ctx, scope)
        except HeronError as exc:
            raise _refused(exc) from None

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        key = key_of(ctx.request)  # a key sees only the tools it may call
        return types.ListToolsResult(
            tools=[t for t in self.listed if key is None or key.allows(self.scopes[t.name])]
        )

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # As the request's key: the methods' gate and the tokens an answer spends see it.
        with acting_as(self.ring, key_of(ctx.request)):
            arguments = dict(params.arguments or {})
            if params.name in self.methods:
                return await self.run_method(ctx, self.methods[params.name], arguments)
            if params.name not in self.tools:
                offered = ", ".join([*self.tools, *self.methods])
                return _result(f"No tool {params.name!r}. Tools: {offered}.", error=True)
            return await self.run_tool(ctx, params.name, arguments)

    async def run_method(
        self, ctx: Any, method: Method, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        assert method.tool is not None
        try:
            with through("mcp"):  # ask's agent turn: held to MCP's ceiling
                value = await self.registry.call(method.name, arguments, self.scoped(ctx))
        except RpcError as exc:  # the method's own message: what to send instead
            problems = f" {json.dumps(exc.data)}" if exc.code == INVALID_PARAMS else ""
            return _result(exc.message + problems, error=True)
        return _result(value, tool=method.tool.name)

    async def run_tool(
        self, ctx: Any, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        _, handler = heron_tools(self.scoped(ctx))[name]
        try:
            self.permit(ctx, self.scopes[name])
            value = await run_in_threadpool(handler, arguments)
        except HeronError as exc:  # the model reads the message and can retry
            return _result(str(exc), error=True)
        except Exception as exc:
            # Left to the SDK, this would be a JSON-RPC error with code 0 and the raw
            # exception text (str(KeyError('x')) is "'x'"): answer a clean tool error.
            log.exception("MCP tool %s failed", name)
            return _result(
                f"{name} failed unexpectedly ({type(exc).__name__}); the server log "
                "has the details.",
                error=True,
            )
        return _result(value, tool=name)

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        self.refuse_unless(ctx, READ)
        listed = await run_in_threadpool(Catalog(self.scoped(ctx)).resources)
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

    async def list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            self.permit(ctx, READ)
            read = Catalog(self.scoped(ctx)).read
            contents = await run_in_threadpool(read, str(params.uri))
        except HeronError as exc:
            raise _refused(exc) from None
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        self.refuse_unless(ctx, READ)
        prompts = await run_in_threadpool(Catalog(self.scoped(ctx)).prompts)
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        try:
            self.permit(ctx, READ)
            catalog = Catalog(self.scoped(ctx))
            return await run_in_threadpool(catalog.prompt, params.name, params.arguments or {})
        except HeronError as exc:
            raise _refused(exc) from None


def build_server(rt: Runtime, registry: Registry | None = None) -> Server[Any]:
    """The MCP server on ``rt``; ``registry``: the JSON-RPC methods, of which those that
    name a tool (``Method.tool``) and that ``mcp_tool_safety`` allows become tools too.
    Each request is answered in its context (the HTTP request's,
    ``heron.server.http.contexts``; over stdio, ``rt``'s own): its libraries, its
    skills, its workspace's tools."""
    door = HeronServer(rt, registry or Registry())
    return Server(
        "heron",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=door.list_tools,
        on_call_tool=door.call_tool,
        on_list_resources=door.list_resources,
        on_list_resource_templates=door.list_templates,
        on_read_resource=door.read_resource,
        on_list_prompts=door.list_prompts,
        on_get_prompt=door.get_prompt,
    )


#: The route of one service's tools.
SERVICE_PATH = "/mcp/{server}"


def service_tools(rt: Runtime, name: str) -> dict[str, Tool]:
    """The tools of ``rt``'s server ``name`` a client of the MCP door may run (within
    ``mcp_tool_safety``), by the name the server gives them."""
    box = rt.toolbox
    originals = box.client.originals if box.client is not None else {}
    most = ceiling(rt.settings, "mcp")
    return {
        originals.get((name, tool.name), tool.name): tool
        for tool in box.registry.tools()
        if tool.source == f"mcp:{name}" and within(tool.safety, most)
    }


def build_service_server(rt: Runtime) -> Server[Any]:
    """The MCP server of ``/mcp/{server}``: each request lists and calls the tools of the
    server its path names, in its context (the module)."""
    ring = keyring(rt)

    def service(ctx: Any) -> tuple[Runtime, str]:
        request = ctx.request
        return runtime_of(rt, request), str(request.path_params["server"])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        try:
            check_call(ring, key_of(ctx.request), "tools")
        except HeronError as exc:
            raise _refused(exc) from None
        scoped, name = service(ctx)
        found = await run_in_threadpool(service_tools, scoped, name)
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=original,
                    description=tool.description,
                    input_schema=tool.parameters,
                    annotations=_annotations(original, tool.safety, open_world=True),
                )
                for original, tool in found.items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        scoped, name = service(ctx)
        arguments = dict(params.arguments or {})
        with acting_as(ring, key_of(ctx.request)):
            try:
                check_call(ring, key_of(ctx.request), "tools")
                found = await run_in_threadpool(service_tools, scoped, name)
                tool = found.get(params.name)
                if tool is None:
                    offered = ", ".join(found) or "none within HERON_MCP_TOOL_SAFETY"
                    raise NotFound(f"No tool {params.name!r} on {name!r}. Tools: {offered}.")
                check_tool(tool, scoped.settings, "mcp")  # the one ceiling, where it runs
                check_arguments(tool, arguments)
                registry = scoped.toolbox.registry
                value = await run_in_threadpool(registry.call, tool.name, arguments)
            except HeronError as exc:  # the model reads the message and can retry
                return _result(str(exc), error=True)
        if isinstance(value, dict) and isinstance(value.get("content"), list):
            return types.CallToolResult.model_validate(value)  # the server's answer as given
        return _result(value, tool=params.name)

    return Server(
        "heron-services",
        version=__version__,
        instructions="One service's tools, through Heron.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def service_routes(rt: Runtime, server: Server[Any], *, max_body: int) -> list[BaseRoute]:
    """``/mcp/{server}``: the SDK's stateless streamable-HTTP route, behind a 404 for a
    server the request's context does not configure."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.routing import Route

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(
        streamable_http_path=SERVICE_PATH,
        stateless_http=True,
        transport_security=security,
        max_request_body_size=max_body,
    )
    return [
        Route(route.path, endpoint=_Configured(rt, route.endpoint), methods=route.methods)
        for route in app.routes
        if isinstance(route, Route)
    ]


class _Configured:
    """An ASGI app (a class, so Starlette passes it the raw request) that answers 404 for
    a server the request's context does not configure, else hands over to ``inner``."""

    def __init__(self, rt: Runtime, inner: Any) -> None:
        self.rt = rt
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.requests import Request

        scoped = runtime_of(self.rt, Request(scope))
        name = str(scope["path_params"]["server"])
        names = [s.name for s in await run_in_threadpool(lambda: scoped.mcp_servers)]
        if name not in names:
            reply = openai_error(
                404,
                f"No MCP server {name!r} in context {scoped.context!r}. Its servers: "
                f"{', '.join(names) or 'none (mcp.json)'}; /mcp routes among them all.",
                "not_found",
            )
            await reply(scope, receive, send)
            return
        await self.inner(scope, receive, send)


def http_routes(server: Server[Any], *, max_body: int) -> list[BaseRoute]:
    """The ``/mcp`` route; the app must run ``server.session_manager.run()`` in its
    lifespan. Host and Origin are checked for every route, this one included, by
    ``heron.server.http.origins.HostOriginMiddleware``, so the SDK's own copy of that check is
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
    server = server_of(rt)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


# -- the feature hooks (heron.server.hooks) ----------------------------------------------


def server_of(rt: Runtime) -> Server[Any]:
    """The server's one MCP server, its routes and its lifespan sharing it; its JSON-RPC
    methods are the server's registry's (``heron.server.app.rpc_registry``)."""
    registry = registry_of(rt)  # empty unless the app built one
    return rt.shared("mcp", lambda: build_server(rt, registry))


#: No methods of its own: it offers the registry's as tools.
rpc = NO_METHODS


def services_of(rt: Runtime) -> Server[Any]:
    """The server's one MCP server of ``/mcp/{server}``."""
    return rt.shared("mcp:services", lambda: build_service_server(rt))


def routes(rt: Runtime) -> list[BaseRoute]:
    max_body = rt.settings.server.max_body
    return [
        *http_routes(server_of(rt), max_body=max_body),
        *service_routes(rt, services_of(rt), max_body=max_body),
    ]


@asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    async with server_of(rt).session_manager.run(), services_of(rt).session_manager.run():
        yield
