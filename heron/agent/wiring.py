"""Where the capabilities meet: the one place above them that wires one into another.

The capabilities (``heron.libraries``, ``heron.skills``, ``heron.tools``, ``heron.llm``,
``heron.jobs``) import none of each other; what one needs of another is handed to it
here, as an object or a callable:

- ``open_tools``: the toolbox (``heron.tools``) with the libraries' ``search_docs`` and
  the skills' ``search_skills``/``read_skill`` (``retrieval_tools``, which the MCP server
  serves too) registered beside the workspace and MCP tools, all on one store;
- ``add_job_tools``: ``delegate_job`` (``heron.jobs``) in a toolbox, on a job store;
- ``open_agent``: the agent (``heron.agent.agent``) on the store, skills, toolbox (with
  ``delegate_job`` when there is a workspace), broker and sessions it opens or is handed;
- ``job_runner``: a ``heron.jobs.JobRunner`` whose ``search_docs`` step searches the
  libraries and whose summary a capable model of ``heron.llm`` writes;
- ``library_enricher``: the libraries' ``Enricher`` (questions a page answers, asked at
  index time) over the broker of ``heron.llm``;
- ``Observers``: the agent's observers (``on_tool_use``, ``on_search``) turned into
  ``heron.interventions`` cards: who writes and searches what;
- ``Scan``: the libraries' sync health and the skills' usage log, read as
  ``heron.interventions`` conditions.

The CLI and the server (its ``Runtime``, its MCP server) build through these, and wire
nothing themselves.

>>> box = open_tools(settings, store=store)                          # doctest: +SKIP
>>> asyncio.run(job_runner(open_jobs(settings)).run_until_idle())    # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from heron.agent.agent import Agent
from heron.agent.answer import ToolUse
from heron.agent.loop import SearchHook, ToolHook
from heron.agent.recall import Recall, Recalled
from heron.agent.sessions import open_sessions
from heron.core.chat import ChatRequest, Message, Sampling, ToolCall
from heron.core.tools import Handler, Tool
from heron.embed import Embedder, calibration_of, embed_queries
from heron.interventions import Activity, Condition, Intervention, Interventions
from heron.interventions.detectors import (
    LibraryHealth,
    Observation,
    SearchRecord,
    library_health,
    search_misses,
)
from heron.jobs import TERMINAL, Job, JobRunner, Jobs, open_jobs
from heron.jobs.tool import register_job_tools
from heron.libraries import load_reranker, read_libraries, search
from heron.libraries.enrich import ModelEnricher
from heron.libraries.state import library_state
from heron.libraries.tool import DocsSearch, docs_tool, search_docs
from heron.llm import Broker, RoutingTable, load_broker
from heron.settings import Settings
from heron.skills import SkillIndex, UsageLog, open_skills
from heron.skills.tool import skill_tools
from heron.store import Store, open_store
from heron.tools import Toolbox, open_toolbox

T = TypeVar("T")
#: Results a job's ``search_docs`` step keeps.
JOB_SEARCH_TOP_K = 5
#: Ended jobs of a conversation whose verdicts its history replays, newest.
RECALLED_JOBS = 5
#: Characters of a job's summary (or failure) replayed: a few sentences.
RECALLED_CHARS = 1500
#: Skill queries the scan reads, newest: enough for a request's last few searches.
SCAN_QUERIES = 1000
#: A Markdown heading, or a Python class or function: what a written file is about.
_HEADING = re.compile(
    r"^(?:\s{0,3}#{1,6}\s+(.+?)\s*#*|(?:async\s+)?(?:class|def)\s+(\w+).*)$", re.M
)


def open_tools(
    settings: Settings | None = None,
    *,
    mcp_config: Path | None = None,
    root: Path | None = None,
    commands: Iterable[str] = (),
    docs_search: DocsSearch | None = None,
    mcp_timeout: float | None = None,
    connect: bool = True,
    store: Store | None = None,
    skills: Callable[[], SkillIndex] | None = None,
    learn: bool = True,
) -> Toolbox:
    """Every tool Heron knows (``heron.tools.open_toolbox``, whose arguments these are,
    plus the capabilities' tools). ``store``: an open store to share (its embedding model
    is loaded once), left open by ``close()``; without one the configured store is
    opened, and ``close()`` closes it. ``skills``: the skill index the skill tools use
    (default: the settings', opened on first use on the toolbox's store).
    ``docs_search``: what answers ``search_docs`` (default: the libraries' search on the
    toolbox's store)."""
    settings = settings or Settings()
    resources = contextlib.ExitStack()  # what this call opens, closed by Toolbox.close
    try:
        if store is None:
            store = resources.enter_context(contextlib.closing(open_store(settings)))
        shared = store

        def own_skills() -> SkillIndex:  # on the toolbox's store: no second store, no pool
            return resources.enter_context(contextlib.closing(open_skills(settings, store=shared)))

        tools = retrieval_tools(settings, lambda: shared, skills or lazy(own_skills))
        if docs_search is not None:
            tools[0] = docs_tool(docs_search)
    except BaseException:
        resources.close()
        raise
    return open_toolbox(
        settings,
        store,
        tools=tools,
        resources=resources,
        mcp_config=mcp_config,
        root=root,
        commands=commands,
        mcp_timeout=mcp_timeout,
        connect=connect,
        learn=learn,
    )


def retrieval_tools(
    settings: Settings, store: Callable[[], Store], skills: Callable[[], SkillIndex]
) -> list[tuple[Tool, Handler]]:
    """``search_docs`` (the libraries' search, on ``store()``), then ``search_skills`` and
    ``read_skill`` (on ``skills()``): what an agent and an MCP client search with. Both
    are called when a tool is, so nothing opens before it is used."""

    def library_search(arguments: dict[str, Any]) -> list[dict[str, Any]]:
        return search_docs(arguments, store(), settings)["results"]

    return [docs_tool(library_search), *skill_tools(skills)]


def add_job_tools(toolbox: Toolbox, jobs: Jobs) -> None:
    """``delegate_job`` in ``toolbox``: the model may hand long tasks to a job of ``jobs``."""
    register_job_tools(toolbox.registry, jobs)


def job_runner(jobs: Jobs, **options: Any) -> JobRunner:
    """``JobRunner(jobs, **options)`` with the libraries' search for its ``search_docs``
    step and the settings' broker (``load_broker``, opened per summary) for its summary."""
    settings = jobs.settings

    def library_search(query: str, store: Store) -> list[dict[str, Any]]:
        hits = search(query, store, top_k=JOB_SEARCH_TOP_K, settings=settings)
        return [hit.to_dict() for hit in hits]

    return JobRunner(jobs, search=library_search, broker=lambda: load_broker(settings), **options)


def open_agent(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    skills: SkillIndex | None = None,
    toolbox: Toolbox | None = None,
    jobs: Jobs | None = None,
    on_tool_use: ToolHook | None = None,
    on_search: SearchHook | None = None,
    table: RoutingTable | None = None,
) -> Agent:
    """The agent the settings describe: the store, libraries, skills, tools (with
    ``search_docs`` on this store), the model broker and the sessions, opened once.
    Close it with ``close()``. A server passes the ``store``, ``skills``, ``toolbox`` and
    ``jobs`` it already has open (the embedding model is then loaded once, the job store
    opened once); they stay open when the agent closes: it closes only what it opened
    here. With a workspace (``tools_root``) the model may hand long tasks to a job
    (``delegate_job`` on ``jobs``, else on the settings' job store, opened here).
    ``on_tool_use`` and ``on_search``: the agent's observers (``Agent``). ``table``: the
    models table to route over (a server's last good one); default: read models.yml."""
    settings = settings or Settings()
    with contextlib.ExitStack() as opened:
        if store is None:
            store = opened.enter_context(contextlib.closing(open_store(settings)))
        if skills is None:
            skills = opened.enter_context(contextlib.closing(open_skills(settings, store=store)))
        if toolbox is None:
            index = skills  # the skill tools search the agent's own index
            toolbox = opened.enter_context(
                contextlib.closing(open_tools(settings, store=store, skills=lambda: index))
            )
        delegates = settings.tools_root is not None
        if delegates and "delegate_job" not in toolbox.registry:
            # Jobs run in the workspace: with one, the model may hand long tasks to a job,
            # in every context alike (the job records its context and runs in its
            # workspace); whether a turn may call it is the tool ceiling's rule.
            if jobs is None:
                jobs = open_jobs(settings)
                opened.callback(jobs.close)
            add_job_tools(toolbox, jobs)
        recall = job_results(jobs) if jobs is not None else None
        broker = Broker(table, settings) if table is not None else load_broker(settings)
        opened.enter_context(contextlib.closing(broker))
        sessions = opened.enter_context(contextlib.closing(open_sessions(settings)))
        resources = opened.pop_all()
    return Agent(
        settings,
        store,
        skills,
        toolbox,
        broker,
        sessions,
        reranker=load_reranker(settings),
        resources=resources,
        tool_workers=settings.agent_tool_workers,
        on_tool_use=on_tool_use,
        on_search=on_search,
        recall=recall,
    )


def job_results(jobs: Jobs, limit: int = RECALLED_JOBS) -> Recall:
    """The agent's ``recall``: the verdicts of the last ``limit`` jobs a conversation
    delegated that have ended, each as the ``delegate_job`` call's result (its state,
    ``ok``, summary, the criteria's verdicts, why it failed), joined after the turn that
    delegated it (``heron.agent.recall``). ``jobs`` is one context's: another's never
    shows."""

    def recall(session_id: str) -> list[Recalled]:
        ended = jobs.list(sorted(TERMINAL), limit, session_id=session_id)
        return [Recalled(job.created_at, job_messages(jobs, job)) for job in reversed(ended)]

    return recall


def job_messages(jobs: Jobs, job: Job) -> tuple[Message, Message]:
    """The call that delegated ``job`` and its result as it ended: what the model reads."""
    result = job.result or {}
    verdict: dict[str, Any] = {"id": job.id, "state": job.state, "prompt": job.prompt}
    if job.state == "completed":
        verdict |= {
            "ok": result.get("ok"),
            "summary": str(result.get("summary") or "")[:RECALLED_CHARS],
            "criteria": [
                {k: c.get(k) for k in ("criterion", "ok", "why") if c.get(k) is not None}
                for c in result.get("criteria") or []
            ],
        }
    elif job.state == "failed":
        verdict["error"] = jobs.failure(job)[:RECALLED_CHARS]
    call = ToolCall(f"job_{job.id}", "delegate_job", {"prompt": job.prompt})
    content = json.dumps(verdict, ensure_ascii=False)
    return (
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", content, tool_call_id=call.id, name="delegate_job"),
    )


#: Tokens the model may write for one page's questions (5 short pairs fit in ~400).
ENRICH_MAX_TOKENS = 600
#: Page characters a model reads by default: most pages whole, for an API model; the
#: local model's first 3,000 (on 2 cores its prompt time is ~1 minute a 1,000 tokens).
MAX_CHARS = 12_000
LOCAL_MAX_CHARS = 3_000
LOCAL_PROVIDER = "local"
#: Tokens of the prompt besides the page: the instructions and the title.
PROMPT_TOKENS = 200
#: Low: the questions should say what the page says, not wander.
ENRICH_TEMPERATURE = 0.2
#: Characters of page text per token, low (code, URLs) so a cut page fits the context.
CHARS_PER_TOKEN = 3
#: Providers that cannot be held to a JSON schema (Anthropic's Messages API): asked in
#: words, and their answer parsed as JSON or ``Q:`` lines.
NO_JSON_MODE = frozenset({"anthropic"})


def library_enricher(settings: Settings, broker: Broker) -> ModelEnricher:
    """The libraries' ``Enricher`` on ``HERON_LIBRARY_ENRICH_MODEL`` (default: the routing
    table's default alias) through ``broker``, which the caller closes. The page is cut
    to fit the model's context; a failed call raises the broker's ``ProviderError``,
    which the indexer reports for that page. A local model is loaded on the first page
    asked, so an index with nothing to ask loads none."""
    alias = settings.library_enrich_model
    spec = broker.table.spec(alias)
    budget = spec.capabilities.context_window - ENRICH_MAX_TOKENS - PROMPT_TOKENS
    wanted = settings.library_enrich_max_chars or (
        LOCAL_MAX_CHARS if spec.provider == LOCAL_PROVIDER else MAX_CHARS
    )
    max_chars = max(1000, min(wanted, budget * CHARS_PER_TOKEN))
    response_format = None if spec.provider in NO_JSON_MODE else "json_schema"

    def complete(system: str, user: str, schema: dict[str, Any]) -> str:
        held = (
            {"type": "json_schema", "json_schema": {"name": "questions", "schema": schema}}
            if response_format
            else None
        )
        request = ChatRequest(
            (Message("system", system), Message("user", user)),
            max_tokens=ENRICH_MAX_TOKENS,
            temperature=ENRICH_TEMPERATURE,
            sampling=Sampling(response_format=held),
        )
        return broker.complete(request, model=spec.alias).text

    return ModelEnricher(
        complete,
        f"{spec.provider}/{spec.model}",
        count=settings.library_enrich_questions,
        max_chars=max_chars,
    )


def lazy(open_: Callable[[], T]) -> Callable[[], T]:
    """``open_()``'s result, opened on the first call and kept: a tool that is never
    called never opens what it needs."""
    opened: list[T] = []

    def get() -> T:
        if not opened:
            opened.append(open_())
        return opened[0]

    return get


def headings(content: str, limit: int = 12) -> list[str]:
    """The headings of a file's first 20,000 characters, for its topic.

    >>> headings("# Voice\\n\\nclass LiveKitAgent:\\n    def join(self): ...")
    ['Voice', 'LiveKitAgent']
    """
    found = (m.group(1) or m.group(2) for m in _HEADING.finditer(content[:20_000]))
    return [h for h in found if h][:limit]


#: Rooms whose activity the observers keep at once, the most recently reported.
ROOMS = 200


@dataclass(frozen=True)
class ActivityReport:
    """One thing a person did: ``kind`` ``edit``, ``release`` (with ``path`` and, for an
    edit, its ``headings``) or ``read``, ``search`` (with ``text``). Bounded and redacted
    by whoever takes it from a client (``heron.server.people``)."""

    kind: Literal["edit", "release", "read", "search"]
    path: str = ""
    text: str = ""
    headings: tuple[str, ...] = ()


class Observers:
    """The agent's observers (``open_agent(on_tool_use=..., on_search=...)``) for each
    conversation's room's interventions (``interventions_room`` when a turn names none,
    ``of(room)`` for the others): who works on what (``heron.interventions.Activity``, topics
    embedded with ``embedder``), and the cards that follows. ``interventions`` is called
    on the first observation that raises something (the service opens on first use)."""

    def __init__(
        self, settings: Settings, embedder: Embedder, interventions: Callable[[], Interventions]
    ) -> None:
        self.interventions = interventions
        self.embedder = embedder
        self._rooms: dict[str, Activity] = {}
        self.activity = self.of(settings.interventions_room)

    def of(self, room: str) -> Activity:
        """The activity of ``room`` (the agent's is ``interventions_room``'s), made on
        first use; at most ``ROOMS`` rooms are kept, the least recently reported go."""
        found = self._rooms.pop(room, None)
        if found is None:
            embedder = self.embedder
            found = Activity(
                embedder.embed,
                embed_query=lambda texts: embed_queries(embedder, texts),
                threshold=lambda text: calibration_of(embedder, text).overlap,
                room=room,
            )
        self._rooms[room] = found
        while len(self._rooms) > ROOMS:
            del self._rooms[next(iter(self._rooms))]
        return found

    def report(self, room: str, person: str, report: ActivityReport) -> list[Intervention]:
        """What a person reports doing outside Heron (an editor plugin, a browser
        extension; ``people.activity``): ``edit`` a file (its headings, when known),
        ``release`` it (committed, pushed, closed), ``read`` or ``search`` something (its
        title or words). Collisions and research overlaps follow as for the agent's own
        tools, in ``room``."""
        activity = self.of(room)
        if report.kind == "edit":
            seen = activity.observe_write(person, report.path, list(report.headings))
        elif report.kind == "release":
            seen = activity.observe_release(person, report.path)
        else:  # read or search: what the person is looking into
            seen = activity.observe_search(person, report.text)
        return self.interventions().apply(seen)

    def tool_use(self, actor: str, use: ToolUse, room: str = "") -> list[Intervention]:
        """What one of the agent's tool calls means for the conversation's ``room``
        (``""``: ``interventions_room``): a ``write_file`` that succeeded is
        ``observe_write`` (a collision when another actor holds the file), a
        ``search_docs`` is ``search`` (a research overlap); with the caller's actor (the
        API's ``user``)."""
        arguments = use.arguments
        if not use.ok or not actor:
            return []
        if use.name == "write_file" and isinstance(arguments.get("path"), str):
            content = arguments.get("content")
            tops = headings(content) if isinstance(content, str) else []
            seen = self._room(room).observe_write(actor, arguments["path"], tops)
        elif use.name == "search_docs" and isinstance(arguments.get("query"), str):
            return self.search(actor, arguments["query"], room)
        else:
            return []
        return self.interventions().apply(seen)

    def search(self, actor: str, query: str, room: str = "") -> list[Intervention]:
        """A search of the libraries by ``actor`` (the agent's grounding search, or its
        ``search_docs`` tool): a research overlap when it is close to the topic of a file
        another actor edits, in the conversation's ``room``."""
        if not actor or not query.strip():
            return []
        return self.interventions().apply(self._room(room).observe_search(actor, query))

    def _room(self, room: str) -> Activity:
        return self.of(room) if room else self.activity


class Scan:
    """One pass (``scan()``) over what changes slowly: each configured library's syncs
    (``library_health``) and the skills usage log (``search_misses``), in the room
    ``interventions_room``. Only changes reach the service: a condition not already
    active nor raised by an earlier pass, a resolution of an active one; so a failing
    library costs one card, not one stored row a minute."""

    def __init__(
        self, settings: Settings, store: Store, interventions: Callable[[], Interventions]
    ) -> None:
        self.settings = settings
        self.store = store
        self.interventions = interventions
        self.raised: set[str] = set()  # keys this scan raised, delivered or suppressed

    def __call__(self) -> list[Intervention]:
        room = self.settings.interventions_room
        seen = [
            # A library's state keeps its last failed sync, not a count: one is a card.
            *library_health(room, self.libraries(), now=time.time(), max_failures=1),
            *search_misses(room, self.searches()),
        ]
        return self.apply(room, seen)

    def libraries(self) -> list[LibraryHealth]:
        found = []
        for library in read_libraries(self.settings):
            state = library_state(self.store, library.name)
            error = state.sync_error
            failures, message = (1, error[1]) if error else (0, "")
            found.append(LibraryHealth(library.name, state.synced_at, failures, message))
        return found

    def searches(self) -> list[SearchRecord]:
        """The skill queries of the usage log, oldest first (none before the first). The
        log keeps the skills each query returned, not their scores: a miss is a query
        that returned none. The tools usage log holds only requests a tool served."""
        path = self.settings.home / "skills.db"
        if not path.exists():
            return []
        with contextlib.closing(UsageLog(path)) as log:
            queries = log.recent(SCAN_QUERIES)
        return [SearchRecord("skills", query, len(returned)) for query, returned in queries]

    def apply(self, room: str, seen: list[Observation]) -> list[Intervention]:
        service = self.interventions()
        active = {i.key for i in service.list(room, limit=10_000, active_only=True)}
        changed: list[Observation] = []
        for item in seen:
            if isinstance(item, Condition):
                if item.key not in active and item.key not in self.raised:
                    changed.append(item)
                self.raised.add(item.key)
            else:
                self.raised.discard(item.key)
                if item.key in active:
                    changed.append(item)
        return service.apply(changed)
