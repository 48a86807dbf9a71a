"""The JSON-RPC methods: each validates its params with a model, then calls the library
function the matching CLI command calls (``search.query`` is ``heron search``). A
feature module (``heron.server.hooks``) with methods only."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from heron.agent.turn import Turn
from heron.jobs.service import MAX_SCOPE
from heron.libraries import add_library, index_library, read_libraries
from heron.libraries.library import forget_library, statuses
from heron.libraries.search import Mode
from heron.server.doors.rpc import McpTool, Methods, Params
from heron.server.features.interventions import Raised
from heron.server.features.keys import current_key, spend_answer
from heron.server.hooks import no_lifespan, no_routes
from heron.server.runtime import Runtime
from heron.settings import Settings
from heron.tools.builtin import check_arguments
from heron.tools.ceiling import Door, ceiling, check_tool, delegates, entered_through
from heron.tools.router import DEFAULT_MODE, DEFAULT_THRESHOLD, DEFAULT_TOP_K, RouteMode
from heron.wiring.enrich import library_enricher

#: The scope of the methods that only read (``heron.keys.SCOPES``).
READ = "read"


class ChatParams(Params):
    message: str = Field(min_length=1, description="The question or instruction.")
    session_id: str | None = Field(default=None, description="Continue this conversation.")
    library: str | None = Field(default=None, description="Only search this library.")
    model: str | None = Field(default=None, description="A model alias from models.yml.")
    answer: Literal["extractive", "generative"] | None = Field(
        default=None,
        description="extractive: quoted from the passages, no model call; generative: "
        "written by the model. Default: the model's (answers: in models.yml).",
    )
    user: str = Field(
        default="", max_length=200, description="Who asks: the actor interventions see."
    )
    room: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SCOPE,
        description="Who shares the conversation: a job the agent delegates goes to this "
        "room's stream. Default: interventions_room.",
    )

    surface: Literal["api", "page"] = Field(
        default="api",
        description="Who reads Heron's own words (a refusal's hint): api names the "
        "request's fields, page what the web page offers.",
    )

    def turn(self, door: Door, settings: Settings) -> Turn:
        """The agent's turn: every field is one of ``Turn``'s, by the same name; hints
        name the request's fields (``surface="api"``), not the CLI's flags, or what the
        page offers (``"page"``). Its tool ceiling and whether it may delegate are
        ``door``'s for the request's key (``heron.tools.ceiling``)."""
        key = current_key()
        return Turn(
            **self.model_dump(),
            tool_safety=ceiling(settings, door, key),
            delegate=delegates(settings, door, key),
        )


class SearchParams(Params):
    query: str = Field(min_length=1, description="A question or keywords.")
    library: str | None = Field(default=None, description="Only this library.")
    collection: str | None = Field(default=None, description="Only this collection.")
    top_k: int = Field(default=10, ge=1, le=100, description="Pages to return.")
    mode: Mode = Field(default="full", description="full, hybrid, dense or lexical.")


class LibraryName(Params):
    name: str = Field(min_length=1, description="The library's name.")


class LibraryAdd(LibraryName):
    source: str = Field(min_length=1, description="A git URL or a local folder.")
    branch: str | None = Field(
        default=None, description="A git library's branch or tag (default: the remote's)."
    )
    include: list[str] = Field(
        default=[], max_length=100, description="Index only pages matching these globs."
    )
    exclude: list[str] = Field(
        default=[], max_length=100, description="Skip pages matching these globs."
    )
    language: str = Field(
        default="auto",
        max_length=16,
        description="The pages' language for lexical search: auto (each page's own) or a "
        "code (pt, es, en ...).",
    )


class OptionalLibrary(Params):
    name: str | None = Field(default=None, description="One library; default: all.")


class SkillSearch(Params):
    query: str = Field(min_length=1, description="What the task is.")
    top_k: int = Field(default=5, ge=1, le=50)


class SkillName(Params):
    name: str = Field(min_length=1, description="The skill's name (any case).")


class ToolRoute(Params):
    query: str = Field(min_length=1, description="The request to find tools for.")
    mode: RouteMode = DEFAULT_MODE
    top_k: int = Field(default=DEFAULT_TOP_K, ge=1, le=128)
    threshold: float | None = Field(
        default=None,
        description="Lowest cosine offered; default: the embedding profile's "
        f"(MiniLM: {DEFAULT_THRESHOLD}).",
    )
    profile: str = Field(default="strict", description="Provider naming rules, e.g. openai.")
    always_include: list[str] = Field(default_factory=list)


class ToolCall(Params):
    name: str = Field(min_length=1, description="The tool's original name (tools.list).")
    arguments: dict[str, Any] = Field(default_factory=dict)


#: Heron's methods. Those of a context's libraries, skills, tools and agent are handed
#: the runtime of the caller's context (``reach="context"``), whose settings say what it
#: sees. A method without a ``scope`` needs ``admin`` (adding, removing and indexing
#: libraries).
rpc = Methods()


@rpc.method(
    "agent.chat",
    ChatParams,
    summary="Answer a question, grounded and cited.",
    reach="context",
    scope="chat",
    tool=McpTool("ask", "Ask Heron (grounded, cited)", "read", idempotent=False),
)
def agent_chat(p: ChatParams, rt: Runtime) -> dict[str, Any]:
    # Asked through MCP (its ask), the turn is held to MCP's ceiling, not the agent's.
    door = entered_through("agent")
    room = p.room or rt.settings.interventions.room
    with Raised(rt.interventions, room) as raised:
        answer = rt.agent.ask(p.turn(door, rt.settings))  # heron ask
    spend_answer(rt, answer, [p.message])
    # The cards raised in the conversation's room during the turn, audio_url and all.
    return answer.to_dict() | {"interventions": raised.drain()}


@rpc.method(
    "search.query",
    SearchParams,
    summary="Search the libraries (heron search).",
    reach="context",
    scope=READ,
)
def search(p: SearchParams, rt: Runtime) -> list[dict[str, Any]]:
    found = rt.search(
        p.query, library=p.library, collection=p.collection, top_k=p.top_k, mode=p.mode
    )
    return [r.to_dict() for r in found]


@rpc.method("library.list", summary="The configured libraries.", reach="context", scope=READ)
def library_list(_: Params, rt: Runtime) -> list[dict[str, Any]]:
    return [x.to_dict() for x in read_libraries(rt.settings)]


@rpc.method("library.add", LibraryAdd, summary="Add a library to libraries.txt.", reach="context")
def library_add(p: LibraryAdd, rt: Runtime) -> dict[str, Any]:
    # A caller over the API is not the machine's user: folders only under
    # HERON_LIBRARY_ROOTS, file:// only when allowed (heron.libraries.config.check_source).
    library = add_library(
        p.name,
        p.source,
        rt.settings,
        caller="api",
        branch=p.branch,
        include=p.include,
        exclude=p.exclude,
        language=p.language,
    )
    return library.to_dict()


@rpc.method(
    "library.remove", LibraryName, summary="Remove a library and its index.", reach="context"
)
def library_remove(p: LibraryName, rt: Runtime) -> dict[str, Any]:
    return {"name": forget_library(p.name, rt.store, rt.settings).name, "removed": True}


@rpc.method("library.index", OptionalLibrary, summary="Sync and index libraries.", reach="context")
def library_index(p: OptionalLibrary, rt: Runtime) -> list[dict[str, Any]]:
    configured = read_libraries(rt.settings)
    names = [p.name] if p.name else [lib.name for lib in configured]
    # A library with enrich=yes has its pages' questions written by the agent's broker.
    asking = any(lib.enrich for lib in configured if lib.name in names)
    enricher = library_enricher(rt.settings, rt.agent.broker) if asking else None
    return [
        index_library(n, rt.store, settings=rt.settings, enricher=enricher).to_dict() for n in names
    ]


@rpc.method(
    "library.status",
    OptionalLibrary,
    summary="Pages, chunks, last sync.",
    reach="context",
    scope=READ,
)
def library_status(p: OptionalLibrary, rt: Runtime) -> list[dict[str, Any]]:
    return [s.to_dict() for s in statuses(rt.store, rt.settings, p.name)]


@rpc.method(
    "skills.search", SkillSearch, summary="Skills that fit a task.", reach="context", scope=READ
)
def skills_search(p: SkillSearch, rt: Runtime) -> list[dict[str, Any]]:
    return [h.to_dict() for h in rt.skills.search(p.query, p.top_k)]


@rpc.method(
    "skills.status", summary="Skill directories and index state.", reach="context", scope=READ
)
def skills_status(_: Params, rt: Runtime) -> dict[str, Any]:
    return rt.skills.status().to_dict()


@rpc.method(
    "skills.show", SkillName, summary="One skill: fields and body.", reach="context", scope=READ
)
def skills_show(p: SkillName, rt: Runtime) -> dict[str, Any]:
    return rt.skills.show(p.name).to_dict()


@rpc.method("tools.list", summary="Every tool and MCP server status.", reach="context", scope=READ)
def tools_list(_: Params, rt: Runtime) -> dict[str, Any]:
    box = rt.toolbox
    return {
        "servers": [s.to_dict() for s in box.statuses],
        "tools": [t.to_dict() for t in box.registry.tools()],
    }


@rpc.method(
    "tools.route",
    ToolRoute,
    summary="The tools to offer for a request.",
    reach="context",
    scope="tools",
)
def tools_route(p: ToolRoute, rt: Runtime) -> dict[str, Any]:
    router = rt.router(
        mode=p.mode,
        top_k=p.top_k,
        threshold=p.threshold,
        profile=p.profile,
        always_include=tuple(p.always_include),
    )
    return router.route(p.query).to_dict()


@rpc.method(
    "tools.call",
    ToolCall,
    summary="Call one tool with JSON arguments.",
    reach="context",
    scope="tools",
)
def tools_call(p: ToolCall, rt: Runtime) -> dict[str, Any]:
    tools = rt.toolbox.registry
    tool = tools.get(p.name)
    # The ceiling first: a key that MCP's call_tool refuses is refused here too.
    check_tool(tool, rt.settings, "rpc", current_key())
    # Wrong argument types are the caller's error (-32001), not a handler's crash.
    check_arguments(tool, p.arguments)
    return {"name": p.name, "result": tools.call(p.name, p.arguments)}


@rpc.method(
    "models.list",
    summary="The models.yml aliases: provider, model.",
    reach="server",
    scope=READ,
)
def models_list(_: Params, rt: Runtime) -> list[dict[str, Any]]:
    table = rt.models  # the last good one (heron.server.features.reload)
    default = table.spec().alias
    return [
        {"alias": alias, "provider": spec.provider, "model": spec.model,
         "answers": spec.capabilities.answers, "default": alias == default}
        for alias, spec in table.models.items()
    ]  # fmt: skip


routes = no_routes
lifespan = no_lifespan
