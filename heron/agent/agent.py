"""``Agent``: a message in, a grounded answer with citations out.

One ``ask`` runs, in order:

1. checks: an empty message, one over ``MAX_MESSAGE_BYTES`` or over the model's context
   window is refused with ``InputError`` before anything else runs;
2. retrieval: the libraries' search (``heron.books.search``) on the message;
3. routing: the tools that fit (``heron.tools``), those above ``agent_tool_safety`` or
   without a handler left out;
4. skills: ``SkillIndex.context_for``, kept when the best skill fits at all;
5. triage (``heron.agent.triage``): ``docs`` puts the passages in the prompt with their
   citations; ``tools`` with confidence forces the first call to the best tool; the
   prompt is cut to the model's context window (``_Prompt.fit``);
6. the loop: a model call; its tool calls run in parallel (``heron.agent.execute``) and
   their results go back to the model; until it answers without calls or
   ``agent_max_steps`` calls are made (the last one is offered no tools, so it answers);
7. the turn is saved to the session.

>>> agent = open_agent()                                       # doctest: +SKIP
>>> answer = agent.ask("How does Heron pick tools?")           # doctest: +SKIP
>>> answer.citations[0].page                                   # doctest: +SKIP
'tools'
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heron.agent.answer import (
    AgentEvent,
    Answer,
    Citation,
    Citations,
    Final,
    Token,
    ToolUse,
    ToolUsed,
)
from heron.agent.execute import run_calls, tool_content
from heron.agent.prompt import system_prompt, user_prompt
from heron.agent.sessions import Sessions, check_session_id, new_session_id
from heron.agent.triage import DOCS_TAG, triage
from heron.books import Reranker, Result, load_reranker, read_libraries, search
from heron.books.index import STATE_PREFIX
from heron.errors import InputError, NotFound
from heron.jobs import open_jobs
from heron.jobs.tool import register_job_tools
from heron.llm import Broker, load_broker
from heron.llm.payload import CHARS_PER_TOKEN, estimate_tokens
from heron.llm.types import ChatRequest, Completion, Message, TextDelta, ToolCall, Usage
from heron.settings import Settings
from heron.skills import SkillContext, SkillIndex, open_skills
from heron.store import Store, open_store
from heron.tools import SAFETY_LEVELS, RoutedTool, Tool, Toolbox, ToolRouter, open_tools

MAX_MESSAGE_BYTES = 1 << 20
#: Tools offered per request: a small model reads every schema in its prompt.
TOOLS_OFFERED = 5
#: Skills are injected only when the best one's cosine reaches this (MiniLM: unrelated
#: texts score 0.1 to 0.3); ``context_for`` alone always returns its best, fitting or not.
SKILL_FLOOR = 0.45


class Agent:
    """Everything an answer needs, opened once; see ``open_agent``."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        skills: SkillIndex,
        toolbox: Toolbox,
        broker: Broker,
        sessions: Sessions,
        *,
        reranker: Reranker | None = None,
        resources: contextlib.ExitStack | None = None,
    ) -> None:
        """``resources`` closes what was opened for this agent; without it, ``close()``
        closes every part."""
        self.settings = settings
        self.store = store
        self.skills = skills
        self.toolbox = toolbox
        self.broker = broker
        self.sessions = sessions
        self.reranker = reranker
        self._resources = resources
        self._routers: dict[tuple, ToolRouter] = {}
        self._collections: dict[str, tuple[str, list[str]]] = {}

    # -- the public calls ----------------------------------------------------------------

    def ask(
        self,
        message: str,
        *,
        session_id: str | None = None,
        library: str | None = None,
        model: str | None = None,
    ) -> Answer:
        """Answer ``message``; ``session_id`` continues a conversation (a new one when
        ``None``; the answer carries its id)."""
        for event in self._run(message, session_id, library, model, streaming=False):
            if isinstance(event, Final):
                return event.answer
        raise AssertionError("the agent loop ended without a final answer")

    def stream(
        self,
        message: str,
        *,
        session_id: str | None = None,
        library: str | None = None,
        model: str | None = None,
    ) -> Iterator[AgentEvent]:
        """``ask``, as events: ``Token`` and ``ToolUsed`` as they happen, then
        ``Citations``, then ``Final``. Bad input raises before the first event."""
        events = self._run(message, session_id, library, model, streaming=True)
        first = next(events)  # runs the checks now, not at the caller's first read
        return _chain(first, events)

    def history(self, session_id: str) -> list[dict[str, Any]]:
        return self.sessions.turns(check_session_id(session_id))

    def close(self) -> None:
        if self._resources is not None:
            self._resources.close()
            return
        for part in (self.sessions, self.toolbox, self.skills, self.store, self.broker):
            part.close()

    # -- the stages ----------------------------------------------------------------------

    def check(self, message: str, model: str | None = None) -> None:
        """Refuse a message no model call should be made for (``InputError``)."""
        if not isinstance(message, str) or not message.strip():
            raise InputError("The message is empty; ask a question, e.g. 'What is Heron?'.")
        size = len(message.encode("utf-8", "surrogatepass"))
        if size > MAX_MESSAGE_BYTES:
            raise InputError(
                f"The message is {size:,} bytes; at most {MAX_MESSAGE_BYTES:,} (1 MB) are "
                "accepted. Put long text in a workspace file and ask about the file instead."
            )
        window = self.broker.capabilities(model).context_window
        tokens = estimate_tokens(ChatRequest((Message("user", message),)))
        if tokens > window - self.settings.agent_max_tokens:
            raise InputError(
                f"The message is about {tokens:,} tokens; model {model or 'default'!r} takes "
                f"{window:,} with {self.settings.agent_max_tokens:,} kept for the answer. "
                "Shorten it, or choose a model with a larger context window (--model)."
            )

    def _room(self, model: str | None) -> int:
        """Prompt tokens the model takes, the answer's kept aside."""
        return self.broker.capabilities(model).context_window - self.settings.agent_max_tokens

    def retrieve(self, message: str, library: str | None = None) -> list[Result]:
        """The library passages for ``message``; none when no library is indexed (a
        ``library`` named but missing is an error)."""
        try:
            return search(
                message,
                self.store,
                library=library,
                top_k=max(self.settings.agent_passages, 5),
                settings=self.settings,
                reranker=self.reranker,
            )
        except NotFound:
            if library is not None:
                raise
            return []

    def route(
        self, message: str, model: str | None = None, vector: np.ndarray | None = None
    ) -> list[RoutedTool]:
        """The tools to offer, best first: routed, callable here, safe enough."""
        caps = self.broker.capabilities(model)
        if not caps.tool_calling:
            return []
        registry = self.toolbox.registry
        tools = registry.tools()
        key = (caps.name_profile, tuple((t.name, t.source) for t in tools))
        router = self._routers.get(key)
        if router is None:  # a new tool (e.g. registered by heron.jobs) means a new index
            limit = min(TOOLS_OFFERED, caps.max_tools or TOOLS_OFFERED)
            router = self.toolbox.router(profile=caps.name_profile, top_k=limit)
            self._routers = {key: router}
        most = SAFETY_LEVELS.index(self.settings.agent_tool_safety)
        return [
            routed
            for routed in router.route(message, vector=vector).tools
            if registry.callable(routed.tool.name)
            and SAFETY_LEVELS.index(routed.tool.safety) <= most
        ]

    def skills_for(self, message: str) -> SkillContext | None:
        try:
            context = self.skills.context_for(message)
        except NotFound:  # no skills indexed
            return None
        if not context.skills or context.skills[0].base_score < SKILL_FLOOR:
            return None
        return context

    def names(self) -> list[str]:
        """What a message can name to be sent to the libraries: each indexed library,
        its collections, and the configured keywords."""
        names: list[str] = []
        for library in read_libraries(self.settings):
            # The page list changes only when the library is indexed again.
            stamp = self.store.kv_get(library.name, "index:last")
            if stamp is None:
                continue
            cached = self._collections.get(library.name)
            if cached is None or cached[0] != stamp:
                pages = self.store.kv_items(library.name, STATE_PREFIX)
                found = {k.removeprefix(STATE_PREFIX).partition("/") for k in pages}
                cached = (stamp, sorted(c for c, slash, _ in found if slash and c))
                self._collections[library.name] = cached
            names += [library.name, *cached[1]]
        return [*names, *self.settings.agent_keywords]

    def passage(self, result: Result) -> str:
        """The text of a result's chunk (a matched question: the question and answer)."""
        if result.via_question:
            return f"{result.title}\nQ: {result.via_question}\nA: {result.snippet}"
        try:
            return self.store.get(result.library, result.chunk).text
        except NotFound:  # re-indexed since the search
            return result.snippet

    # -- the loop ------------------------------------------------------------------------

    def _run(
        self,
        message: str,
        session_id: str | None,
        library: str | None,
        model: str | None,
        *,
        streaming: bool,
    ) -> Iterator[AgentEvent]:
        started = time.perf_counter()
        self.check(message, model)
        session_id = check_session_id(session_id) if session_id else new_session_id()
        timings: dict[str, float] = {}
        clock = _Clock(timings)

        with clock("retrieval"):
            vector = self.store.embedder.embed([message])[0]
            results = self.retrieve(message, library)
        with clock("routing"):
            routed = self.route(message, model, vector)
        with clock("skills"):
            skills = self.skills_for(message)
        with clock("prompt"):
            decision = triage(
                message,
                results,
                routed,
                names=self.names(),
                library=library,
                docs_threshold=self.settings.agent_docs_threshold,
                tool_threshold=self.settings.agent_tool_threshold,
            )
            passages = results[: self.settings.agent_passages] if decision.kind == "docs" else []
            forced = decision.tool if decision.kind == "tools" and decision.confident else None
            prompt = _Prompt(
                message,
                [(Citation.from_result(r.to_dict()), self.passage(r)) for r in passages],
                skills.text if skills else "",
                [r.tool for r in routed],
                self.sessions.history(session_id),
                forced,
            )
            notes = prompt.fit(self._room(model))
            citations = [c for c, _ in prompt.passages]
            offered = {t.name: t for t in prompt.tools}

        loop = _Loop(self, prompt.messages(), offered, forced, model, streaming, notes)
        yield from loop.run()
        timings["model"] = round(loop.model_seconds, 4)
        timings["tools"] = round(loop.tool_seconds, 4)
        for use in loop.tools:
            citations += _cited(use, offered)
        citations = list(dict.fromkeys(citations))
        total = time.perf_counter() - started
        timings["total"] = round(total, 4)
        timings["overhead"] = round(total - loop.model_seconds, 4)
        answer = Answer(
            answer=loop.text,
            citations=citations,
            tools=loop.tools,
            skills=[h.name for h in skills.skills] if skills and prompt.skills else [],
            usage=loop.usage,
            timings=timings,
            session_id=session_id,
            model=loop.model or model or "",
            triage=decision,
            steps=loop.steps,
            notes=loop.notes,
        )
        self.sessions.save(session_id, message, answer.to_dict())
        for use in loop.tools:
            if use.ok and not use.refused:  # the tool served this request: an example of it
                self.toolbox.learn(use.name, message)
        yield Citations(citations)
        yield Final(answer)


@dataclass
class _Prompt:
    """The first request's parts; ``fit`` shrinks them to the model's context window."""

    message: str
    passages: list[tuple[Citation, str]]
    skills: str
    tools: list[Tool]
    history: list[Message]
    forced: str | None  # the first tool, when forced

    def messages(self) -> list[Message]:
        system = system_prompt(self.skills, tools=bool(self.tools))
        user = user_prompt(self.message, self.passages)
        return [Message("system", system), *self.history, Message("user", user)]

    def tokens(self) -> int:
        """The broker's own estimate, so what fits here fits there."""
        return estimate_tokens(ChatRequest(tuple(self.messages()), tuple(self.tools)))

    def fit(self, room: int) -> list[str]:
        """Drop what matters least until the prompt takes at most ``room`` tokens: the
        oldest turns, the skills, the tools after the first (a forced tool is first), then
        passages from the last. Returns notes saying what went."""
        dropped: Counter[str] = Counter()
        while self.tokens() > room:
            if self.history:
                self.history = self.history[2:]
                dropped["earlier turns"] += 1
            elif self.skills:
                self.skills = ""
                dropped["skill blocks"] += 1
            elif len(self.tools) > (1 if self.forced else 0):
                self.tools = self.tools[:-1]
                dropped["tools"] += 1
            elif self.passages:
                self.passages = self.passages[:-1]
                dropped["passages"] += 1
            else:
                break  # the message alone: ``check`` made sure it fits
        return [f"dropped {n} {what} to fit the context window" for what, n in dropped.items()]


class _Loop:
    """Model calls and tool runs until the model answers (see the module doc, step 6)."""

    def __init__(
        self,
        agent: Agent,
        messages: list[Message],
        offered: dict[str, Tool],
        forced: str | None,
        model: str | None,
        streaming: bool,
        notes: list[str],
    ) -> None:
        self.agent = agent
        self.messages = messages
        self.offered = offered
        self.forced = forced
        self.model_alias = model
        self.streaming = streaming
        self.text = ""
        self.tools: list[ToolUse] = []
        self.usage = Usage()
        self.model = ""
        self.model_seconds = 0.0
        self.tool_seconds = 0.0
        self.steps = 0
        self.notes = notes
        self.room = agent._room(model)

    def run(self) -> Iterator[AgentEvent]:
        settings = self.agent.settings
        most = settings.agent_max_steps
        for step in range(1, most + 1):
            self.steps = step
            if self.offered and step < most:
                # Forcing on later turns too would make the model call the tool forever.
                choice = self.forced if step == 1 and self.forced else "auto"
                tools = tuple(self.offered.values())
            else:
                choice, tools = "none", ()
            request = ChatRequest(
                tuple(self.messages), tools, choice, max_tokens=settings.agent_max_tokens
            )
            completion = yield from self._call(request)
            self.model_seconds += completion.seconds
            self.usage = self.usage + completion.usage
            self.model = completion.model or self.model
            if not completion.tool_calls:
                self.text = completion.text
                return
            start = time.perf_counter()
            calls = completion.tool_calls
            forced = self.forced if choice == self.forced else None
            answered = shown = self._run_calls(calls, forced)
            if forced:
                calls, answered, shown = self._defaults_for_refused(calls, answered)
            self.tool_seconds += time.perf_counter() - start
            self.messages.append(Message("assistant", completion.text, calls))
            # The results share what the context window has left.
            used = estimate_tokens(ChatRequest(tuple(self.messages), tuple(self.offered.values())))
            share = max(0, self.room - used) * CHARS_PER_TOKEN // len(answered)
            self.messages += [
                Message("tool", tool_content(use, share), tool_call_id=use.id, name=use.name)
                for use in answered
            ]
            for use in shown:
                self.tools.append(use)
                yield ToolUsed(use)
        # Only a model that calls tools when offered none gets here.
        self.notes.append(f"stopped after {most} model calls (HERON_AGENT_MAX_STEPS)")

    def _run_calls(self, calls: Sequence[ToolCall], forced: str | None) -> list[ToolUse]:
        return run_calls(
            calls,
            self.offered,
            self.agent.toolbox.registry,
            timeout=self.agent.settings.agent_tool_timeout,
            forced=forced,
        )

    def _defaults_for_refused(
        self, calls: Sequence[ToolCall], uses: list[ToolUse]
    ) -> tuple[tuple[ToolCall, ...], list[ToolUse], list[ToolUse]]:
        """The forced call again, with no arguments, when the tool refused the model's and
        is read-only and needs none: triage already chose the tool, and a small model's
        invented arguments (``{"path": "C:\\Users\\..."}`` for "list my files") should
        not cost the answer its grounding. Returns the calls and uses the model sees, and
        every use (the refused ones too)."""
        tool = self.offered[self.forced]
        if tool.safety != "read" or tool.parameters.get("required"):
            return tuple(calls), uses, uses
        fixed, answered, shown = [], [], []
        for call, use in zip(calls, uses, strict=True):
            shown.append(use)
            if use.forced and use.refused and (call.arguments or call.error):
                call = ToolCall(call.id, call.name, {})
                (use,) = self._run_calls([call], self.forced)
                shown.append(use)
                self.notes.append(f"{call.name} refused the model's arguments; ran with none")
            fixed.append(call)
            answered.append(use)
        return tuple(fixed), answered, shown

    def _call(self, request: ChatRequest) -> Generator[AgentEvent, None, Completion]:
        broker = self.agent.broker
        if not self.streaming:
            return broker.complete(request, model=self.model_alias)
        completion = None
        for event in broker.stream(request, model=self.model_alias):
            if isinstance(event, TextDelta):
                yield Token(event.text)
            else:
                completion = event.completion
        if completion is None:
            raise AssertionError("the broker's stream ended without Done")
        return completion


class _Clock:
    """``with clock("stage"):`` adds the seconds spent to ``timings["stage"]``."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings

    @contextlib.contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - start
            self.timings[stage] = round(self.timings.get(stage, 0.0) + spent, 4)


def _cited(use: ToolUse, offered: dict[str, Tool]) -> list[Citation]:
    """The citations in a library search tool's results."""
    tool = offered.get(use.name)
    if not use.ok or tool is None or DOCS_TAG not in tool.tags:
        return []
    rows = use.result.get("results") if isinstance(use.result, dict) else use.result
    cited = []
    for row in rows if isinstance(rows, list) else []:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            cited.append(Citation.from_result(row))
    return cited


def _chain(first: AgentEvent, rest: Iterator[AgentEvent]) -> Iterator[AgentEvent]:
    yield first
    yield from rest


def open_agent(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    skills: SkillIndex | None = None,
    toolbox: Toolbox | None = None,
) -> Agent:
    """The agent the settings describe: the store, libraries, skills, tools (with
    ``search_docs`` on this store), the model broker and the sessions, opened once.
    Close it with ``close()``. A server passes the ``store``, ``skills`` and ``toolbox``
    it already has open (the embedding model is then loaded once); they stay open when
    the agent closes."""
    settings = settings or Settings()
    with contextlib.ExitStack() as opened:
        if store is None:
            store = opened.enter_context(contextlib.closing(open_store(settings)))
        if skills is None:
            skills = opened.enter_context(contextlib.closing(open_skills(settings, store.embedder)))
        if toolbox is None:
            index = skills  # the skill tools search the agent's own index
            toolbox = opened.enter_context(
                contextlib.closing(open_tools(settings, store=store, skills=lambda: index))
            )
        if settings.tools_root is not None and "delegate_job" not in toolbox.registry:
            # Jobs run in the workspace: with one, the model may hand long tasks to a job.
            jobs = open_jobs(settings)
            opened.callback(jobs.store.close)
            register_job_tools(toolbox.registry, jobs)
        broker = opened.enter_context(contextlib.closing(load_broker(settings)))
        sessions = opened.enter_context(contextlib.closing(Sessions(settings.home / "agent.db")))
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
    )
