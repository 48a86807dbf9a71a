"""``Agent``: a ``Turn`` in, a grounded answer with citations out.

One ``ask`` runs three phases over small values (``_run``):

1. **ground** (``_ground`` -> ``_Grounded``): the checks first (an empty message, one
   over ``MAX_MESSAGE_BYTES`` or over the model's context window is refused with
   ``InputError``, as are fields that do not fit together, ``Turn.validate``); then
   retrieval: the libraries' search (``heron.libraries.search``) on the message
   (``Found``), Heron's own docs (the built-in ``heron`` library) only when the message
   names Heron or the caller chose that library; routing: the tools that fit
   (``heron.tools``), those above ``agent_tool_safety`` (the turn's ``tool_safety``) or
   without a handler left out, none when the client sent its own tools; skills:
   ``SkillIndex.context_for``, kept when the best skill fits at all (generated answers
   only); triage (``heron.agent.triage``): ``docs`` keeps the passages with their
   citations, ``tools`` with confidence forces the first call to the best tool; the
   first prompt, cut to the model's context window (``Prompt.fit``);
2. **respond** (``_respond`` -> ``_Reply``), in one of two modes (``Turn.answer``, else
   the model's ``answers`` capability in models.yml):

   - ``extractive``: the passages' own sentences that answer the message, each cited
     (``heron.agent.extractive``); no model call, except a one-line lead when the model
     is a capable one (``answers: generative``) and the arguments of a forced tool call,
     whose results then make the answer;
   - ``generative``: the loop (``heron.agent.loop``): a model call; its tool calls run
     in parallel (``heron.agent.execute``) and their results go back to the model;
     until it answers without calls or ``agent_max_steps`` calls are made (the last one
     is offered none of Heron's tools, so it answers). Text is streamed through
     ``heron.agent.guard``: when it starts to loop the call is stopped and the
     extractive answer is given instead (``fallback: "degenerate"``; ``finish_reason``
     stays OpenAI's, ``stop``, and ``finish_detail`` says ``degenerate``). Calls that
     write text get repeat penalties (``PENALTIES``) unless the caller set its own;
3. **finish** (``_finish`` -> ``Answer``): the citations, timings and notes assembled,
   the turn saved to the session, the tools that served it taught the request.

>>> agent = open_agent()                                       # doctest: +SKIP
>>> answer = agent.ask(Turn("How does Heron pick tools?"))     # doctest: +SKIP
>>> answer.citations[0].page                                   # doctest: +SKIP
'tools'
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from heron.agent.answer import (
    AgentEvent,
    Answer,
    AnswerMode,
    Citation,
    Citations,
    ClientToolCalls,
    Final,
    Grounding,
    Related,
    Token,
    ToolUse,
    finish,
)
from heron.agent.execute import TOOL_WORKERS, ToolExecutor
from heron.agent.extractive import (
    Limits,
    compose,
    nothing_found,
    passage_body,
    tool_summary,
)
from heron.agent.followup import (
    CONTEXT_TURNS,
    REWRITE_TURNS,
    contextual,
    earlier_questions,
    last_reply,
    refers_back,
    rewrite_request,
    standalone,
)
from heron.agent.guard import repeats
from heron.agent.loop import Loop, LoopLimits, Prompt, SearchHook, ToolHook, tell
from heron.agent.prompt import lead_prompt, system_prompt
from heron.agent.sentences import sentences
from heron.agent.sessions import Sessions, check_session_id, new_session_id
from heron.agent.triage import DOCS_TAG, Triage, best_dense, triage
from heron.agent.turn import Surface, Turn
from heron.agent.wiring import add_job_tools, open_tools
from heron.core.caller import Caller
from heron.core.chat import ChatRequest, Message
from heron.core.contexts import DEFAULT
from heron.core.tools import SAFETY_LEVELS, Safety, Tool
from heron.embed import calibration_of, embed_queries
from heron.errors import HeronError, InputError, NotFound
from heron.jobs import Jobs, open_jobs
from heron.libraries import Reranker, Result, load_reranker, read_libraries, scopes, search_many
from heron.libraries.state import last_index, library_state
from heron.llm import Broker, RoutingTable, load_broker
from heron.llm.errors import ProviderError
from heron.llm.payload import CHARS_PER_TOKEN, estimate_tokens
from heron.resource import Resource
from heron.settings import Settings
from heron.skills import SkillContext, SkillIndex, open_skills
from heron.store import Store, open_store
from heron.tools import LOCAL_ONLY, RoutedTool, Toolbox, ToolRouter

log = logging.getLogger("heron.agent")

MAX_MESSAGE_BYTES = 1 << 20
#: Passages an extractive answer may quote from (and cites): no prompt limits them, and
#: the gold page is among the first five for 92% of the Kubernetes questions.
EXTRACTIVE_PASSAGES = 5
#: Tokens of an extractive answer's lead line.
LEAD_TOKENS = 48
#: Follow-ups a capable model rewrote, remembered (a turn retried or streamed twice
#: costs one call).
REWRITE_CACHE = 256


def routing_options(
    settings: Settings, tools: Sequence[Tool], max_tools: int | None = None
) -> dict[str, Any]:
    """``ToolRouter`` options from the ``agent_routing_*`` settings: the mode, ``top_k``
    (capped by the model's ``max_tools``), the threshold (unset: the embedder's) and the
    always-include tools that are registered (one that is not, e.g. a tool left off by its
    setting, is skipped with a warning rather than failing every request; the doctor's
    tools check names it)."""
    known = {t.name for t in tools}
    wanted = settings.agent_routing_always_include
    missing = [name for name in wanted if name not in known]
    if missing:
        log.warning("agent_routing_always_include names unknown tools: %s", ", ".join(missing))
    top_k = settings.agent_routing_top_k
    return {
        "mode": settings.agent_routing_mode,
        "top_k": min(top_k, max_tools) if max_tools else top_k,
        "threshold": settings.agent_routing_threshold,
        "always_include": [name for name in wanted if name in known],
    }


class Agent(Resource):
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
        tool_workers: int = TOOL_WORKERS,
        on_tool_use: ToolHook | None = None,
        on_search: SearchHook | None = None,
    ) -> None:
        """The parts are handed over open, and stay open when the agent closes (the
        ownership rule, ``heron.store.base``): ``resources`` holds what was opened for
        this agent alone (``open_agent`` fills it), and ``close()`` closes that. The
        agent owns its tool executor: at most ``tool_workers`` tool calls at once,
        joined by ``close()``.

        Observers, told with the turn's ``user`` (the actor) and never failing a turn (a
        ``HeronError`` they raise is logged): ``on_tool_use(actor, use)`` after each tool
        call the agent ran, ``on_search(actor, message)`` after each grounding search of
        the libraries. A server passes its interventions' detectors here."""
        self.settings = settings
        self.store = store
        self.skills = skills
        self.toolbox = toolbox
        self.broker = broker
        self.sessions = sessions
        self.reranker = reranker
        self.on_tool_use = on_tool_use
        self.on_search = on_search
        self._resources = resources or contextlib.ExitStack()
        self.executor = ToolExecutor(tool_workers)
        self._routers: dict[tuple, ToolRouter] = {}
        # Cosine thresholds on the embedder's scale (MiniLM's are no use under e5): skills
        # join the prompt from ``skill`` (``context_for`` alone returns its best, fitting or
        # not); below the docs threshold an extractive answer still quotes the closest
        # passages, with a note, from ``weak`` (under it they are unrelated).
        self.thresholds = calibration_of(store.embedder)
        docs, tool = settings.agent_docs_threshold, settings.agent_tool_threshold
        self.docs_threshold = self.thresholds.docs if docs is None else docs
        self.tool_threshold = self.thresholds.tool if tool is None else tool
        self._collections: dict[str, tuple[dict[str, Any], list[str]]] = {}
        self._rewrites: dict[tuple, str | None] = {}  # follow-ups a model made standalone

    # -- the public calls ----------------------------------------------------------------

    def ask(self, turn: Turn) -> Answer:
        """The answer to ``turn`` (its fields: ``Turn``).

        Raises ``InputError`` for a bad message or fields that do not fit together,
        ``NotFound`` for an unknown ``library``, the broker's ``ProviderError`` when no
        model answers."""
        for event in self._run(turn, streaming=False):
            if isinstance(event, Final):
                return event.answer
        raise AssertionError("the agent loop ended without a final answer")

    def stream(self, turn: Turn) -> Iterator[AgentEvent]:
        """``ask``, as events: ``Token`` and ``ToolUsed`` as they happen, then
        ``ClientToolCalls`` when the model called the client's tools, then ``Citations``,
        then ``Final``. Bad input raises before the first event.

        The tokens joined are ``Final.answer.answer``, except when the guard stopped a
        looping model: the tokens then go on with a line saying so and the extractive
        answer, which alone is ``Final.answer.answer``."""
        events = self._run(turn, streaming=True)
        first = next(events)  # runs the checks now, not at the caller's first read
        return _chain(first, events)

    def history(self, session_id: str) -> list[dict[str, Any]]:
        return self.sessions.turns(check_session_id(session_id))

    def close(self) -> None:
        """Wait for the tool calls still running, then close what was opened for this
        agent (``resources``); the parts it was handed stay open."""
        self.executor.close()
        self._resources.close()

    # -- the stages ----------------------------------------------------------------------

    def check(
        self,
        message: str,
        model: str | None = None,
        *,
        instructions: str = "",
        max_tokens: int | None = None,
        surface: Surface = "cli",
    ) -> None:
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
        answer = max_tokens or self.settings.agent_max_tokens
        messages = (Message("system", instructions), Message("user", message))
        tokens = estimate_tokens(ChatRequest(messages if instructions else messages[1:]))
        if tokens > window - answer:
            raise InputError(
                f"The message is about {tokens:,} tokens; model {model or 'default'!r} takes "
                f"{window:,} with {answer:,} kept for the answer. "
                "Shorten it, or choose a model with a larger context window "
                + ("(--model)." if surface == "cli" else "(the request's model).")
            )

    def _room(self, model: str | None, max_tokens: int | None = None) -> int:
        """Prompt tokens the model takes, the answer's kept aside."""
        answer = max_tokens or self.settings.agent_max_tokens
        return self.broker.capabilities(model).context_window - answer

    def scope(self, message: str, library: str | None = None) -> list[str]:
        """The indexed libraries ``message`` is searched in: ``library`` alone when
        given, else ``heron.libraries.scope_of`` (the user's libraries; Heron's own docs
        when the message names Heron or they are all there is); none when no library is
        indexed (a ``library`` named but missing is an error)."""
        try:
            return scopes([message], self.store, self.settings, library)[0]
        except NotFound:
            if library is not None:
                raise
            return []

    def retrieve(
        self, message: str, library: str | None = None, vector: np.ndarray | None = None
    ) -> list[Result]:
        """The library passages for ``message`` (searched with ``vector`` when given)
        from its ``scope``; none when no library is indexed."""
        top_k = max(self.settings.agent_passages, EXTRACTIVE_PASSAGES)
        try:
            return search_many(
                [message],
                self.store,
                settings=self.settings,
                library=library,
                top_k=top_k,
                reranker=self.reranker,
                vectors=None if vector is None else np.reshape(vector, (1, -1)),
            )[0]
        except NotFound:  # no library indexed (a library named but missing is an error)
            if library is not None:
                raise
            return []

    def ground(
        self,
        message: str,
        vector: np.ndarray,
        history: Sequence[Message],
        *,
        library: str | None = None,
        model: str | None = None,
    ) -> Found:
        """What a turn is searched with (``heron.agent.followup``) and what it found.
        Without earlier questions, the
        message as it is. A capable model rewrites a follow-up first; else the message
        alone, and the conversation's context when that grounds poorly or the message
        points back."""
        earlier = earlier_questions(history)
        if earlier and self.mode(model) == "generative":
            rewritten = self._rewrite(message, history, model)
            if rewritten is not None:
                query_vector = embed_queries(self.store.embedder, [rewritten])[0]
                return self._grounded(rewritten, query_vector, library, "model")
        found = self._grounded(message, vector, library, "message")
        if not earlier or not found.grounding.libraries:
            return found
        poor = (best_dense(found.results) or 0.0) < self.docs_threshold
        if not (poor or refers_back(message)):
            return found
        recent = earlier[-CONTEXT_TURNS:]
        reply = last_reply(history)
        rows = embed_queries(self.store.embedder, [*recent, reply] if reply else recent)
        text, blended = contextual(
            message, vector, recent, rows[: len(recent)], rows[len(recent)] if reply else None
        )
        return self._grounded(text, blended, library, "context")

    def _grounded(self, query: str, vector: np.ndarray, library: str | None, how: str) -> Found:
        libraries = tuple(self.scope(query, library))
        results = self.retrieve(query, library, vector) if libraries else []
        return Found(Grounding(query, libraries, how), results, vector)  # type: ignore[arg-type]

    def _rewrite(self, message: str, history: Sequence[Message], model: str | None) -> str | None:
        """A capable model's standalone form of ``message``, once per conversation and
        turn (cached); ``None`` when the call fails or its reply is no question."""
        key = (model, message, tuple((m.role, m.content) for m in history[-REWRITE_TURNS:]))
        if key in self._rewrites:
            return self._rewrites[key]
        try:
            reply = self.broker.complete(rewrite_request(message, history), model=model).text
        except ProviderError:
            return None  # the deterministic form stands in; nothing is cached
        rewritten = standalone(reply, message, earlier_questions(history))
        self._rewrites[key] = rewritten
        while len(self._rewrites) > REWRITE_CACHE:
            self._rewrites.pop(next(iter(self._rewrites)))
        return rewritten

    def route(
        self,
        message: str,
        model: str | None = None,
        vector: np.ndarray | None = None,
        *,
        safety: Safety | None = None,
        local: bool = True,
    ) -> list[RoutedTool]:
        """The tools to offer, best first: routed, callable here, no more harmful than
        ``safety`` (default ``agent_tool_safety``); unless ``local`` (``Turn.local_tools``,
        false for ``/v1``), none tagged ``local-only`` (``python_exec``), whatever the
        safety allows."""
        caps = self.broker.capabilities(model)
        if not caps.tool_calling:
            return []
        registry = self.toolbox.registry
        tools = registry.tools()
        key = (caps.name_profile, tuple((t.name, t.source) for t in tools))
        router = self._routers.get(key)
        if router is None:  # a new tool (e.g. registered by heron.jobs) means a new index
            router = self.toolbox.router(
                profile=caps.name_profile, **routing_options(self.settings, tools, caps.max_tools)
            )
            self._routers = {key: router}
        most = SAFETY_LEVELS.index(safety or self.settings.agent_tool_safety)
        return [
            routed
            for routed in router.route(message, vector=vector).tools
            if registry.runnable(routed.tool.name)
            and SAFETY_LEVELS.index(routed.tool.safety) <= most
            and (local or LOCAL_ONLY not in routed.tool.tags)
        ]

    def _skill_query(self, message: str) -> SkillContext | None:
        """The skills' context for ``message``, logged in the usage log (``None``: no
        skills indexed); whether it fits is ``_fits``'s to say."""
        try:
            return self.skills.context_for(message)
        except NotFound:  # no skills indexed
            return None

    def _record_skill_use(self, turn: Turn, grounded: _Grounded, reply: _Reply) -> None:
        """Tell the skills' usage log which skills served this turn: each one the model
        read (``read_skill``) and each one in the prompt that the answer names, against
        the turn's skill query (made now, when the turn made none, for a skill read in
        an extractive answer). So ``heron skills usage`` fills with no report by hand."""
        prompted = grounded.skills.skills if grounded.skills and grounded.prompt.skills else []
        read = [
            use.arguments["name"]
            for use in reply.loop.tools
            if use.name == "read_skill" and use.ok and isinstance(use.arguments.get("name"), str)
        ]
        named = [hit.name for hit in prompted if _names(reply.loop.text, hit.name)]
        used = list(dict.fromkeys([*read, *named]))
        if not used:
            return
        context = grounded.skill_query or self._skill_query(turn.message)
        if context is None or context.query_id is None:  # no skills, or an index with no log
            return
        try:
            for name in used:
                self.skills.record_use(context.query_id, name)
        except HeronError as exc:  # the log is a measure: it never fails an answer
            log.warning("skill use not recorded: %s", exc)

    def names(self) -> list[str]:
        """What a message can name to be sent to the libraries: each indexed library,
        its collections, and the configured keywords."""
        names: list[str] = []
        for library in read_libraries(self.settings):
            # The page list changes only when the library is indexed again.
            stamp = last_index(self.store, library.name)
            if not stamp:
                continue
            cached = self._collections.get(library.name)
            if cached is None or cached[0] != stamp:
                cached = (stamp, library_state(self.store, library.name).collections)
                self._collections[library.name] = cached
            names += [library.name, *cached[1]]
        return [*names, *self.settings.agent_keywords]

    def passage(self, result: Result) -> str:
        """The text of a result's chunk (a matched question: the question and answer)."""
        if result.via_question:
            return f"{result.title}\nQ: {result.via_question}\nA: {result.snippet}"
        try:
            record = self.store.get(result.library, result.chunk)
        except NotFound:  # re-indexed since the search
            return result.snippet
        if sentences(passage_body(record.text)):
            return record.text
        # A section's first chunk may be all code or table (a command block under its
        # heading); the prose that explains it is in the next chunk of the same section.
        page, _, number = result.chunk.rpartition("#")
        try:
            following = self.store.get(result.library, f"{page}#{int(number) + 1}")
        except (NotFound, ValueError):
            return record.text
        if following.metadata.get("heading") != record.metadata.get("heading"):
            return record.text
        return f"{record.text}\n\n{passage_body(following.text)}"

    def mode(self, model: str | None = None) -> AnswerMode:
        """How ``model``'s answers are made when the request does not say."""
        return self.broker.capabilities(model).answers

    # -- the turn ------------------------------------------------------------------------

    def _mode(self, turn: Turn) -> AnswerMode:
        if turn.answer is not None:
            return turn.answer
        acts = turn.client_tools and turn.tool_choice != "none"
        if acts or turn.continues or turn.sampling.response_format:
            return "generative"  # only a model can call tools or follow a format
        return self.mode(turn.model)

    def _history(self, turn: Turn, session_id: str) -> tuple[list[Message], list[Message]]:
        """``(before, after)``: the messages before the grounded user message, and after
        it (a continued turn's tool calls and results)."""
        if turn.history is None:
            return self.sessions.history(session_id), []
        history = list(turn.history)
        if not turn.continues:
            return history, []
        last = max((i for i, m in enumerate(history) if m.role == "user"), default=-1)
        if last < 0:
            raise InputError(
                "history ends with tool results but holds no user message; send the "
                "conversation from the user's question on."
            )
        return history[:last], history[last + 1 :]

    def _run(self, turn: Turn, *, streaming: bool) -> Iterator[AgentEvent]:
        """The turn in three phases: ``_ground`` (what to answer from), ``_respond`` (the
        text, streamed), ``_finish`` (the answer assembled, saved, learnt from)."""
        record = _Record()
        turn.validate()
        self.check(
            turn.message,
            turn.model,
            instructions=turn.instructions,
            max_tokens=turn.sampling.max_tokens,
            surface=turn.surface,
        )
        grounded = self._ground(turn, record)
        reply = yield from self._respond(turn, grounded, record, streaming=streaming)
        answer = self._finish(turn, grounded, reply, record)
        yield Citations(answer.citations)
        yield Final(answer)

    # -- phase 1: ground -----------------------------------------------------------------

    def _ground(self, turn: Turn, record: _Record) -> _Grounded:
        """Retrieval, routing, skills and triage: the first prompt, cut to the window."""
        session_id = check_session_id(turn.session_id) if turn.session_id else new_session_id()
        mode = self._mode(turn)
        with record.clock("retrieval"):
            before, after = self._history(turn, session_id)
            vector = embed_queries(self.store.embedder, [turn.message])[0]
            found = self.ground(
                turn.message, vector, before, library=turn.library, model=turn.model
            )
            if found.grounding.libraries:
                tell(self.on_search, turn.user, turn.message)
        with record.clock("routing"):
            # A client that sends tools gets its own offered, none of Heron's: the client
            # decides what may happen, and Heron's would run here, unasked by it.
            routed: list[RoutedTool] = []
            if turn.tool_choice != "none" and not turn.client_tools:
                routed = self.route(
                    turn.message,
                    turn.model,
                    vector,
                    safety=turn.tool_safety,
                    local=turn.local_tools,
                )
        with record.clock("skills"):
            query = self._skill_query(turn.message) if mode == "generative" else None
            skills = query if query is not None and _fits(query, self.thresholds.skill) else None
        with record.clock("prompt"):
            decision = triage(
                turn.message,
                found.results,
                routed,
                names=self.names(),
                library=turn.library,
                docs_threshold=self.docs_threshold,
                tool_threshold=self.tool_threshold,
            )
            passages = self._passages(mode, decision, found.results, record.notes)
            prompt = self._prompt(turn, decision, passages, skills, routed, before, after)
            if mode == "generative" or prompt.forced:
                record.notes += prompt.fit(self._room(turn.model, turn.sampling.max_tokens))
        return _Grounded(session_id, mode, found, decision, passages, skills, prompt, query)

    def _passages(
        self, mode: AnswerMode, decision: Triage, results: list[Result], notes: list[str]
    ) -> list[Result]:
        """The passages the prompt holds: triage's, or for an extractive answer the
        closest ones when none fits closely (with a note saying so)."""
        count = EXTRACTIVE_PASSAGES if mode == "extractive" else self.settings.agent_passages
        passages = results[:count] if decision.kind == "docs" else []
        related = (decision.docs_score or 0) >= self.thresholds.weak
        if mode == "extractive" and decision.kind == "knowledge" and related:
            # Quoting the closest passages invents nothing; saying they fit would.
            passages = results[:count]
            notes.append(
                f"no passage fits closely (best match {decision.docs_score:.2f} < "
                f"{self.docs_threshold}); these are the closest"
            )
        return passages

    def _prompt(
        self,
        turn: Turn,
        decision: Triage,
        passages: list[Result],
        skills: SkillContext | None,
        routed: list[RoutedTool],
        before: list[Message],
        after: list[Message],
    ) -> Prompt:
        # The client's explicit choice, or a turn it continues, outranks triage's.
        confident = decision.kind == "tools" and decision.confident
        forced = decision.tool if confident and turn.tool_choice == "auto" else None
        return Prompt(
            turn.message,
            [(Citation.from_result(r.to_dict()), self.passage(r)) for r in passages],
            skills.text if skills else "",
            [r.tool for r in routed],
            before,
            None if turn.continues else forced,
            turn.instructions,
            after,
            list(turn.client_tools) if turn.tool_choice != "none" else [],
        )

    # -- phase 2: respond ----------------------------------------------------------------

    def _respond(
        self, turn: Turn, grounded: _Grounded, record: _Record, *, streaming: bool
    ) -> Generator[AgentEvent, None, _Reply]:
        """The model's loop (generated answers, forced tool calls), then the extractive
        answer where it is one or replaces a looping model's text."""
        prompt = grounded.prompt
        loop = Loop(
            turn,
            prompt,
            broker=self.broker,
            executor=self.executor,
            registry=self.toolbox.registry,
            limits=self._limits(turn),
            on_tool_use=self.on_tool_use,
            streaming=streaming,
            notes=record.notes,
            mode=grounded.mode,
            caller=Caller(session_id=grounded.session_id, user=turn.user),
        )
        if grounded.mode == "generative" or prompt.forced:
            yield from loop.run()
        citations = [c for c, _ in prompt.passages]
        fallback = None
        if loop.degenerate is not None:
            fallback = "degenerate"
            record.notes.append(f"the model went {loop.degenerate}; stopped, and quoted instead")
        if grounded.mode == "extractive" or fallback:
            citations = yield from self._quote(turn, grounded, loop, record, fallback, streaming)
        elif not (grounded.passages or loop.tools or loop.client_calls or turn.continues):
            scope, score = list(grounded.found.grounding.libraries), grounded.decision.docs_score
            record.notes.append(nothing_found(scope, self._indexed(), score, generated=True))
        if loop.client_calls:
            yield ClientToolCalls(tuple(loop.client_calls))
        return _Reply(loop, citations, fallback)

    def _quote(
        self,
        turn: Turn,
        grounded: _Grounded,
        loop: Loop,
        record: _Record,
        fallback: str | None,
        streaming: bool,
    ) -> Generator[AgentEvent, None, list[Citation]]:
        """The extractive answer as the loop's text; returns the citations it quotes."""
        passages = grounded.prompt.passages
        with record.clock("extractive"):
            text, quoted, used = self._extract(turn, grounded, loop.tools)
            citations = [passages[i][0] for i in used]  # the passages quoted
        if fallback and streaming:
            yield Token(f"\n\n[Heron stopped the model: it kept repeating itself.]\n\n{text}")
        elif not fallback:
            lead = self._lead(turn, quoted, loop) if quoted else ""
            text = f"{lead}\n\n{text}" if lead else text
            if streaming:
                yield Token(text)
        loop.text = text
        if turn.instructions and not fallback:
            record.notes.append("instructions are not used by an extractive answer")
        return citations

    # -- phase 3: finish -----------------------------------------------------------------

    def _finish(self, turn: Turn, grounded: _Grounded, reply: _Reply, record: _Record) -> Answer:
        """The answer, saved with the session; the tools that served it learn the request."""
        answer = self._answer(turn, grounded, reply, record)
        self.sessions.save(grounded.session_id, turn.message, answer.to_dict())
        self._record_skill_use(turn, grounded, reply)
        for use in reply.loop.tools:
            if use.ok and not use.refused:  # the tool served this request: an example of it
                self.toolbox.learn(use.name, turn.message)
        return answer

    def _answer(self, turn: Turn, grounded: _Grounded, reply: _Reply, record: _Record) -> Answer:
        loop, timings = reply.loop, record.timings
        timings["model"] = round(loop.model_seconds, 4)
        timings["tools"] = round(loop.tool_seconds, 4)
        cited = [c for use in loop.tools for c in _cited(use, loop.offered)]
        citations = list(dict.fromkeys(reply.citations + cited))
        related = [
            Related(c, round(r.score, 4))
            for r in grounded.found.results[:EXTRACTIVE_PASSAGES]
            if (c := Citation.from_result(r.to_dict())) not in citations
        ]
        total = time.perf_counter() - record.started
        timings["total"] = round(total, 4)
        timings["overhead"] = round(total - loop.model_seconds, 4)
        skills = grounded.skills
        return Answer(
            answer=loop.text,
            citations=citations,
            tools=loop.tools,
            skills=[h.name for h in skills.skills] if skills and grounded.prompt.skills else [],
            usage=loop.usage,
            timings=timings,
            session_id=grounded.session_id,
            model=loop.model or self.broker.table.spec(turn.model).alias,
            triage=grounded.decision,
            steps=loop.steps,
            notes=record.notes,
            mode="extractive" if reply.fallback else grounded.mode,
            fallback=reply.fallback,
            # OpenAI's reason; Heron's own (a fallback, a loop guard) is the detail.
            **_finished(loop, reply.fallback),
            tool_calls=list(loop.client_calls),
            grounding=grounded.found.grounding,
            related=related,
        )

    # -- helpers of the phases -----------------------------------------------------------

    def _limits(self, turn: Turn) -> LoopLimits:
        settings = self.settings
        return LoopLimits(
            max_steps=settings.agent_max_steps,
            max_tokens=settings.agent_max_tokens,
            tool_timeout=settings.agent_tool_timeout,
            room=self._room(turn.model, turn.sampling.max_tokens),
        )

    def _indexed(self) -> list[str]:
        """The configured libraries that are indexed."""
        indexed = {info.name for info in self.store.namespaces()}
        return [lib.name for lib in read_libraries(self.settings) if lib.name in indexed]

    def _extract(
        self, turn: Turn, grounded: _Grounded, uses: Sequence[ToolUse]
    ) -> tuple[str, list[str], tuple[int, ...]]:
        """The extractive answer to what was searched (``grounding.query``, with its
        vector): quotes from the prompt's passages (weighed by retrieval's scores), what
        the tools returned (``uses``), or what grounding found when there is neither; the
        quotes alone; the passages quoted, in the order of their markers."""
        passages = grounded.prompt.passages
        parts, quotes, used = [], [], ()
        if passages:
            tokens = turn.sampling.max_tokens
            limits = Limits(chars=tokens * CHARS_PER_TOKEN if tokens else None)
            bodies = [passage_body(text) for _, text in passages]
            headings = [c.heading for c, _ in passages]
            quoted = compose(
                grounded.found.grounding.query,
                grounded.found.vector,
                bodies,
                self.store.embedder,
                limits,
                headings=headings,
                scores=[r.score for r in grounded.passages][: len(bodies)],
            )
            quotes, used = [q.text for q in quoted.quotes], quoted.used
            parts.append(
                quoted.text
                or "The passages found hold code or tables, not sentences to quote; "
                "open the sources below."
            )
        if uses:
            parts.append(tool_summary(uses))
        if not parts:
            parts.append(
                nothing_found(
                    list(grounded.found.grounding.libraries),
                    self._indexed(),
                    grounded.decision.docs_score,
                    generated=False,
                    surface=turn.surface,
                )
            )
        return "\n\n".join(parts), quotes, used

    def _lead(self, turn: Turn, quotes: list[str], loop: Loop) -> str:
        """A capable model's one line above an extractive answer ('' for a weak model,
        or when the call fails or loops: the quotes stand alone)."""
        if self.mode(turn.model) != "generative":
            return ""
        system = system_prompt(instructions=turn.instructions)
        sampling = replace(loop.sampling_for(text_call=True), max_tokens=LEAD_TOKENS)
        request = ChatRequest(
            (Message("system", system), Message("user", lead_prompt(turn.message, quotes))),
            max_tokens=LEAD_TOKENS,
            temperature=sampling.temperature,
            sampling=sampling,
        )
        try:
            done = self.broker.complete(request, model=turn.model)
        except ProviderError as exc:
            loop.notes.append(f"no lead line: {exc}")
            return ""
        loop.model_seconds += done.seconds
        loop.usage = loop.usage + done.usage
        loop.model = done.model or loop.model
        lead = " ".join((done.text.strip().splitlines() or [""])[0].split())
        return "" if repeats(lead) else lead


@dataclass
class _Record:
    """What a turn notes as it runs: when it started, the seconds each stage took
    (``with record.clock("stage"):``), and the notes the answer carries."""

    started: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def clock(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - start
            self.timings[stage] = round(self.timings.get(stage, 0.0) + spent, 4)


@dataclass(frozen=True)
class Found:
    """What a turn's retrieval found: the ``grounding`` (what was searched where), the
    ``results``, and the ``vector`` of the query searched."""

    grounding: Grounding
    results: list[Result]
    vector: np.ndarray


@dataclass(frozen=True)
class _Grounded:
    """The ground phase's outcome: the session, the answer's mode, what retrieval found,
    triage's decision, the passages chosen (before the prompt was cut to fit), the skills
    that fit and the first prompt."""

    session_id: str
    mode: AnswerMode
    found: Found
    decision: Triage
    passages: list[Result]
    skills: SkillContext | None
    prompt: Prompt
    skill_query: SkillContext | None = None


@dataclass(frozen=True)
class _Reply:
    """The respond phase's outcome: the loop (its text, tools, usage), the citations of
    the passages the text rests on, and the fallback that replaced the model's text."""

    loop: Loop
    citations: list[Citation]
    fallback: str | None


def _finished(loop: Loop, fallback: str | None) -> dict[str, str | None]:
    """``finish_reason`` and ``finish_detail`` of the answer: a fallback's text is whole
    (``stop``) whatever ended the model's call."""
    reason = "stop" if fallback else loop.finish_reason
    reason, detail = finish(reason, fallback or loop.finish_detail)
    return {"finish_reason": reason, "finish_detail": detail}


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
        delegates = settings.tools_root is not None and settings.context == DEFAULT
        if delegates and "delegate_job" not in toolbox.registry:
            # Jobs run in the workspace: with one, the model may hand long tasks to a job.
            # Not yet in another context: a job records none, and runs in the server's.
            if jobs is None:
                jobs = open_jobs(settings)
                opened.callback(jobs.close)
            add_job_tools(toolbox, jobs)
        broker = Broker(table, settings) if table is not None else load_broker(settings)
        opened.enter_context(contextlib.closing(broker))
        sessions = opened.enter_context(
            contextlib.closing(Sessions(settings.home / "agent.db", settings.context))
        )
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
    )


def _names(text: str, name: str) -> bool:
    """Whether ``text`` names the skill ``name`` (``release-notes`` also as "release
    notes"), as a whole word: the answer followed it."""
    spoken = "[-_ ]".join(re.escape(word) for word in re.split(r"[-_ ]+", name))
    return re.search(rf"(?<![\w-]){spoken}(?![\w-])", text, re.IGNORECASE) is not None


def _fits(context: SkillContext, threshold: float) -> bool:
    """Whether the best skill of ``context`` fits at all (``context_for`` returns its
    best, fitting or not)."""
    return bool(context.skills) and context.skills[0].dense_score >= threshold
