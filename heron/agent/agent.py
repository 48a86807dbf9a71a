"""``Agent``: a message in, a grounded answer with citations out.

One ``ask`` runs, in order:

1. checks: an empty message, one over ``MAX_MESSAGE_BYTES`` or over the model's context
   window is refused with ``InputError`` before anything else runs, as are hooks that
   do not fit together (a ``tool_choice`` naming no tool sent, a ``tool`` message
   answering no call);
2. retrieval: the libraries' search (``heron.libraries.search``) on the message; Heron's own
   docs (the built-in ``heron`` library) only when the message names Heron or the caller
   chose that library;
3. routing: the tools that fit (``heron.tools``), those above ``agent_tool_safety`` (the
   turn's ``tool_safety``) or without a handler left out; none when the client sent its
   own tools;
4. skills: ``SkillIndex.context_for``, kept when the best skill fits at all (generated
   answers only: an extractive answer has no prompt to put them in);
5. triage (``heron.agent.triage``): ``docs`` keeps the passages with their citations;
   ``tools`` with confidence forces the first call to the best tool;
6. the answer, in one of two modes (``answer=``, else the model's ``answers``
   capability in models.yml):

   - ``extractive``: the passages' own sentences that answer the message, each cited
     (``heron.agent.extractive``); no model call, except a one-line lead when the model
     is a capable one (``answers: generative``) and the arguments of a forced tool call,
     whose results then make the answer;
   - ``generative``: the prompt cut to the model's context window (``_Prompt.fit``),
     then the loop: a model call; its tool calls run in parallel
     (``heron.agent.execute``) and their results go back to the model; until it answers
     without calls or ``agent_max_steps`` calls are made (the last one is offered none
     of Heron's tools, so it answers). Text is streamed through ``heron.agent.guard``:
     when it starts to loop the call is stopped and the extractive answer is given
     instead (``fallback: "degenerate"``; ``finish_reason`` stays OpenAI's, ``stop``,
     and ``finish_detail`` says ``degenerate``). Calls that write text get repeat penalties
     (``PENALTIES``) unless the caller set its own;
7. the turn is saved to the session.

>>> agent = open_agent()                                       # doctest: +SKIP
>>> answer = agent.ask("How does Heron pick tools?")           # doctest: +SKIP
>>> answer.citations[0].page                                   # doctest: +SKIP
'tools'
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from heron.agent.answer import (
    ANSWER_MODES,
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
from heron.agent.loop import Loop, Prompt, SearchHook, Surface, ToolHook, Turn, tell
from heron.agent.prompt import lead_prompt, system_prompt
from heron.agent.sentences import sentences
from heron.agent.sessions import Sessions, check_session_id, new_session_id
from heron.agent.triage import DOCS_TAG, Triage, best_dense, triage
from heron.agent.wiring import open_tools
from heron.core.chat import ChatRequest, Message, Sampling
from heron.core.tools import SAFETY_LEVELS, Safety, Tool
from heron.embed import calibration_of, embed_queries
from heron.errors import InputError, NotFound
from heron.jobs import Jobs, open_jobs
from heron.jobs.tool import register_job_tools
from heron.libraries import Reranker, Result, load_reranker, read_libraries, scopes, search_many
from heron.libraries.state import last_index, library_state
from heron.llm import Broker, load_broker
from heron.llm.errors import ProviderError
from heron.llm.payload import CHARS_PER_TOKEN, estimate_tokens
from heron.settings import Settings
from heron.skills import SkillContext, SkillIndex, open_skills
from heron.store import Store, open_store
from heron.tools import RoutedTool, Toolbox, ToolRouter

MAX_MESSAGE_BYTES = 1 << 20
#: Tools offered per request: a small model reads every schema in its prompt.
TOOLS_OFFERED = 5
#: Passages an extractive answer may quote from (and cites): no prompt limits them, and
#: the gold page is among the first five for 92% of the Kubernetes questions.
EXTRACTIVE_PASSAGES = 5
#: Tokens of an extractive answer's lead line.
LEAD_TOKENS = 48
TOOL_CHOICES = ("auto", "none", "required")
#: Follow-ups a capable model rewrote, remembered (a turn retried or streamed twice
#: costs one call).
REWRITE_CACHE = 256


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

    def ask(
        self,
        message: str,
        *,
        session_id: str | None = None,
        library: str | None = None,
        model: str | None = None,
        answer: AnswerMode | None = None,
        instructions: str | None = None,
        history: Sequence[Message] | None = None,
        sampling: Sampling | None = None,
        client_tools: Sequence[Tool] = (),
        tool_choice: str = "auto",
        user: str = "",
        tool_safety: Safety | None = None,
        surface: Surface = "cli",
    ) -> Answer:
        """Answer ``message``. Without the keywords below, as before: a grounded answer
        in the model's default mode, the session's earlier turns as history.

        - ``session_id`` continues a conversation (a new one when ``None``; the answer
          carries its id). ``library`` searches that library only; ``model`` is an alias
          of models.yml.
        - ``answer``: ``"extractive"`` (quoted from the passages, no model call) or
          ``"generative"`` (written by the model). ``None``: generative when the client
          sent tools, history ending in tool results, or a ``response_format`` (only a
          model can act on those), else the model's ``answers`` capability.
        - ``instructions``: the client's system messages, joined. They go into the
          system prompt after Heron's grounding rules; an extractive answer ignores them.
        - ``history``: the client's conversation, oldest first: ``user``, ``assistant``
          (with its ``tool_calls``) and ``tool`` messages, no ``system`` ones. Used
          instead of the session's history. When it ends with ``tool`` messages (the
          client ran the tools of a ``finish_reason="tool_calls"`` answer), the turn
          continues from there: ``message`` is then the text of its last ``user``
          message, which gets the grounding (the passages) where it stands. Otherwise
          it holds the turns before ``message``.
        - ``sampling``: passed to every model call of the turn (a provider that cannot
          honour a field refuses the call naming it); ``sampling.max_tokens`` caps the
          answer (and the length of an extractive one, at about 4 characters a token).
          Penalties left unset get ``PENALTIES`` on calls that write text.
        - ``client_tools``: tools the client runs. When they are sent, the model is
          offered those alone, none of Heron's: the client decides what may happen, and
          a call of Heron's would run here, unasked by it. When the model calls one,
          the turn ends: ``Answer.tool_calls`` holds the calls, unrun, and
          ``finish_reason`` is ``"tool_calls"``.
        - ``tool_choice``: for the first model call: ``"auto"``, ``"none"`` (no tool at
          all, Heron's included), ``"required"`` or a client tool's name. Without client
          tools, ``"auto"`` lets triage force Heron's best tool. ``"required"`` and a
          name make the first call one of the client's tools (the local model is held to
          them by a grammar); a model that answers otherwise is a ``ProviderError``.
        - ``user``: who asks (the API's ``user``), the actor ``on_tool_use`` and
          ``on_search`` are told of; ``""`` for nobody in particular.
        - ``tool_safety``: the most harmful of Heron's tools offered (``SAFETY_LEVELS``);
          ``None``: ``agent_tool_safety``. ``/v1`` passes ``openai_tool_safety``.
        - ``surface``: who reads the messages: ``"cli"`` (hints name flags, ``--model``)
          or ``"api"`` (they name the request's fields, ``model``).

        Raises ``InputError`` for a bad message or hooks that do not fit together,
        ``NotFound`` for an unknown ``library``, the broker's ``ProviderError`` when no
        model answers.
        """
        request = Turn.of(message, session_id, library, model, answer, instructions, history,
                          sampling, client_tools, tool_choice, user, tool_safety,
                          surface)  # fmt: skip
        for event in self._run(request, streaming=False):
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
        answer: AnswerMode | None = None,
        instructions: str | None = None,
        history: Sequence[Message] | None = None,
        sampling: Sampling | None = None,
        client_tools: Sequence[Tool] = (),
        tool_choice: str = "auto",
        user: str = "",
        tool_safety: Safety | None = None,
        surface: Surface = "cli",
    ) -> Iterator[AgentEvent]:
        """``ask``, as events: ``Token`` and ``ToolUsed`` as they happen, then
        ``ClientToolCalls`` when the model called the client's tools, then ``Citations``,
        then ``Final``. Bad input raises before the first event.

        The tokens joined are ``Final.answer.answer``, except when the guard stopped a
        looping model: the tokens then go on with a line saying so and the extractive
        answer, which alone is ``Final.answer.answer``."""
        request = Turn.of(message, session_id, library, model, answer, instructions, history,
                          sampling, client_tools, tool_choice, user, tool_safety,
                          surface)  # fmt: skip
        events = self._run(request, streaming=True)
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
    ) -> tuple[Grounding, list[Result], np.ndarray]:
        """What a turn is searched with (``heron.agent.followup``) and what it found:
        ``(grounding, results, the query's vector)``. Without earlier questions, the
        message as it is. A capable model rewrites a follow-up first; else the message
        alone, and the conversation's context when that grounds poorly or the message
        points back."""
        earlier = earlier_questions(history)
        if earlier and self.mode(model) == "generative":
            rewritten = self._rewrite(message, history, model)
            if rewritten is not None:
                query_vector = embed_queries(self.store.embedder, [rewritten])[0]
                return self._grounded(rewritten, query_vector, library, "model")
        grounding, results, vector = self._grounded(message, vector, library, "message")
        if not earlier or not grounding.libraries:
            return grounding, results, vector
        poor = (best_dense(results) or 0.0) < self.docs_threshold
        if not (poor or refers_back(message)):
            return grounding, results, vector
        recent = earlier[-CONTEXT_TURNS:]
        reply = last_reply(history)
        rows = embed_queries(self.store.embedder, [*recent, reply] if reply else recent)
        text, blended = contextual(
            message, vector, recent, rows[: len(recent)], rows[len(recent)] if reply else None
        )
        return self._grounded(text, blended, library, "context")

    def _grounded(
        self, query: str, vector: np.ndarray, library: str | None, how: str
    ) -> tuple[Grounding, list[Result], np.ndarray]:
        libraries = tuple(self.scope(query, library))
        results = self.retrieve(query, library, vector) if libraries else []
        return Grounding(query, libraries, how), results, vector  # type: ignore[arg-type]

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
    ) -> list[RoutedTool]:
        """The tools to offer, best first: routed, callable here, no more harmful than
        ``safety`` (default ``agent_tool_safety``)."""
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
        most = SAFETY_LEVELS.index(safety or self.settings.agent_tool_safety)
        return [
            routed
            for routed in router.route(message, vector=vector).tools
            if registry.runnable(routed.tool.name)
            and SAFETY_LEVELS.index(routed.tool.safety) <= most
        ]

    def skills_for(self, message: str) -> SkillContext | None:
        try:
            context = self.skills.context_for(message)
        except NotFound:  # no skills indexed
            return None
        if not context.skills or context.skills[0].dense_score < self.thresholds.skill:
            return None
        return context

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

    def _validate(self, req: Turn) -> None:
        """Hooks that cannot work together are the caller's error, before any work."""
        if req.answer is not None and req.answer not in ANSWER_MODES:
            raise InputError(
                f"Unknown answer mode {req.answer!r}. Choose from: {', '.join(ANSWER_MODES)}."
            )
        if req.sampling.max_tokens is not None and req.sampling.max_tokens < 1:
            raise InputError(f"max_tokens must be at least 1, got {req.sampling.max_tokens}.")
        names = [t.name for t in req.client_tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"The tools sent name {', '.join(twice)} more than once.")
        choice = req.tool_choice
        if choice not in TOOL_CHOICES and choice not in names:
            raise InputError(
                f"tool_choice {choice!r} is neither auto, none nor required, nor the name of "
                f"a tool sent (sent: {', '.join(names) or 'none'})."
            )
        if choice == "required" and not names:
            raise InputError("tool_choice 'required' needs tools; send them in 'tools'.")
        called: set[str] = set()
        for i, m in enumerate(req.history or ()):
            if m.role == "system":
                raise InputError(
                    f"history[{i}] is a system message; pass system messages as instructions."
                )
            called |= {c.id for c in m.tool_calls}
            if m.role == "tool" and m.tool_call_id not in called:
                raise InputError(
                    f"history[{i}] is a tool result for call {m.tool_call_id!r}, which no "
                    "earlier assistant message made; send the assistant message with its "
                    "tool_calls before the results."
                )
        self.check(
            req.message,
            req.model,
            instructions=req.instructions,
            max_tokens=req.sampling.max_tokens,
            surface=req.surface,
        )

    def _mode(self, req: Turn) -> AnswerMode:
        if req.answer is not None:
            return req.answer
        acts = req.client_tools and req.tool_choice != "none"
        if acts or req.continues or req.sampling.response_format:
            return "generative"  # only a model can call tools or follow a format
        return self.mode(req.model)

    def _history(self, req: Turn, session_id: str) -> tuple[list[Message], list[Message]]:
        """``(before, after)``: the messages before the grounded user message, and after
        it (a continued turn's tool calls and results)."""
        if req.history is None:
            return self.sessions.history(session_id), []
        history = list(req.history)
        if not req.continues:
            return history, []
        last = max((i for i, m in enumerate(history) if m.role == "user"), default=-1)
        if last < 0:
            raise InputError(
                "history ends with tool results but holds no user message; send the "
                "conversation from the user's question on."
            )
        return history[:last], history[last + 1 :]

    def _run(self, req: Turn, *, streaming: bool) -> Iterator[AgentEvent]:
        started = time.perf_counter()
        self._validate(req)
        session_id = check_session_id(req.session_id) if req.session_id else new_session_id()
        mode = self._mode(req)
        timings: dict[str, float] = {}
        clock = _Clock(timings)
        notes: list[str] = []

        with clock("retrieval"):
            before, after = self._history(req, session_id)
            vector = embed_queries(self.store.embedder, [req.message])[0]
            grounding, results, query_vector = self.ground(
                req.message, vector, before, library=req.library, model=req.model
            )
            scope = list(grounding.libraries)
            if scope:
                tell(self.on_search, req.user, req.message)
        with clock("routing"):
            # A client that sends tools gets its own offered, none of Heron's: the client
            # decides what may happen, and Heron's would run here, unasked by it.
            routed: list[RoutedTool] = []
            if req.tool_choice != "none" and not req.client_tools:
                routed = self.route(req.message, req.model, vector, safety=req.tool_safety)
        with clock("skills"):
            skills = self.skills_for(req.message) if mode == "generative" else None
        with clock("prompt"):
            decision = triage(
                req.message,
                results,
                routed,
                names=self.names(),
                library=req.library,
                docs_threshold=self.docs_threshold,
                tool_threshold=self.tool_threshold,
            )
            count = EXTRACTIVE_PASSAGES if mode == "extractive" else self.settings.agent_passages
            passages = results[:count] if decision.kind == "docs" else []
            related = (decision.docs_score or 0) >= self.thresholds.weak
            weak = decision.kind == "knowledge" and related
            if mode == "extractive" and weak:
                # Quoting the closest passages invents nothing; saying they fit would.
                passages = results[:count]
                notes.append(
                    f"no passage fits closely (best match {decision.docs_score:.2f} < "
                    f"{self.docs_threshold}); these are the closest"
                )
            # The client's explicit choice, or a turn it continues, outranks triage's.
            confident = decision.kind == "tools" and decision.confident
            forced = decision.tool if confident and req.tool_choice == "auto" else None
            forced = None if req.continues else forced
            prompt = Prompt(
                req.message,
                [(Citation.from_result(r.to_dict()), self.passage(r)) for r in passages],
                skills.text if skills else "",
                [r.tool for r in routed],
                before,
                forced,
                req.instructions,
                after,
                list(req.client_tools) if req.tool_choice != "none" else [],
            )
            if mode == "generative" or forced:
                notes += prompt.fit(self._room(req.model, req.sampling.max_tokens))
            citations = [c for c, _ in prompt.passages]
            offered = {t.name: t for t in prompt.tools}

        loop = Loop(self, req, prompt, offered, streaming, notes, mode)
        if mode == "generative" or forced:
            yield from loop.run()
        fallback = None
        if loop.degenerate is not None:
            fallback = "degenerate"
            notes.append(f"the model went {loop.degenerate}; stopped, and quoted instead")
        if mode == "extractive" or fallback:
            with clock("extractive"):
                text, quoted, used = self._extract(
                    req, grounding.query, query_vector, prompt.passages, loop.tools, scope,
                    decision, [r.score for r in passages],
                )  # fmt: skip
                citations = [prompt.passages[i][0] for i in used]  # the passages quoted
            if fallback and streaming:
                yield Token(f"\n\n[Heron stopped the model: it kept repeating itself.]\n\n{text}")
            elif not fallback:
                lead = self._lead(req, quoted, loop) if quoted else ""
                text = f"{lead}\n\n{text}" if lead else text
                if streaming:
                    yield Token(text)
            loop.text = text
            if req.instructions and not fallback:
                notes.append("instructions are not used by an extractive answer")
        elif not (passages or loop.tools or loop.client_calls or req.continues):
            notes.append(nothing_found(scope, self._indexed(), decision.docs_score, generated=True))
        if loop.client_calls:
            yield ClientToolCalls(tuple(loop.client_calls))
        timings["model"] = round(loop.model_seconds, 4)
        timings["tools"] = round(loop.tool_seconds, 4)
        for use in loop.tools:
            citations += _cited(use, offered)
        citations = list(dict.fromkeys(citations))
        related = [
            Related(c, round(r.score, 4))
            for r in results[:EXTRACTIVE_PASSAGES]
            if (c := Citation.from_result(r.to_dict())) not in citations
        ]
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
            model=loop.model or self.broker.table.spec(req.model).alias,
            triage=decision,
            steps=loop.steps,
            notes=notes,
            mode="extractive" if fallback else mode,
            fallback=fallback,
            # OpenAI's reason; Heron's own (a fallback, a loop guard) is the detail.
            **_finished(loop, fallback),
            tool_calls=list(loop.client_calls),
            grounding=grounding,
            related=related,
        )
        self.sessions.save(session_id, req.message, answer.to_dict())
        for use in loop.tools:
            if use.ok and not use.refused:  # the tool served this request: an example of it
                self.toolbox.learn(use.name, req.message)
        yield Citations(citations)
        yield Final(answer)

    def _indexed(self) -> list[str]:
        """The configured libraries that are indexed."""
        indexed = {info.name for info in self.store.namespaces()}
        return [lib.name for lib in read_libraries(self.settings) if lib.name in indexed]

    def _extract(
        self,
        req: Turn,
        query: str,
        vector: np.ndarray,
        passages: Sequence[tuple[Citation, str]],
        uses: Sequence[ToolUse],
        scope: list[str],
        decision: Triage,
        scores: Sequence[float],
    ) -> tuple[str, list[str], tuple[int, ...]]:
        """The extractive answer to ``query`` (what was searched; ``vector`` its
        vector): quotes from ``passages`` (``scores``: retrieval's, in their order),
        what the tools returned, or what grounding found when there is neither; the
        quotes alone; the passages quoted, in the order of their markers."""
        parts, quotes, used = [], [], ()
        if passages:
            tokens = req.sampling.max_tokens
            limits = Limits(chars=tokens * CHARS_PER_TOKEN if tokens else None)
            bodies = [passage_body(text) for _, text in passages]
            headings = [c.heading for c, _ in passages]
            quoted = compose(
                query,
                vector,
                bodies,
                self.store.embedder,
                limits,
                headings=headings,
                scores=scores[: len(bodies)],
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
                    scope,
                    self._indexed(),
                    decision.docs_score,
                    generated=False,
                    surface=req.surface,
                )
            )
        return "\n\n".join(parts), quotes, used

    def _lead(self, req: Turn, quotes: list[str], loop: Loop) -> str:
        """A capable model's one line above an extractive answer ('' for a weak model,
        or when the call fails or loops: the quotes stand alone)."""
        if self.mode(req.model) != "generative":
            return ""
        system = system_prompt(instructions=req.instructions)
        sampling = replace(loop.sampling_for(text_call=True), max_tokens=LEAD_TOKENS)
        request = ChatRequest(
            (Message("system", system), Message("user", lead_prompt(req.message, quotes))),
            max_tokens=LEAD_TOKENS,
            temperature=sampling.temperature,
            sampling=sampling,
        )
        try:
            done = self.broker.complete(request, model=req.model)
        except ProviderError as exc:
            loop.notes.append(f"no lead line: {exc}")
            return ""
        loop.model_seconds += done.seconds
        loop.usage = loop.usage + done.usage
        loop.model = done.model or loop.model
        lead = " ".join((done.text.strip().splitlines() or [""])[0].split())
        return "" if repeats(lead) else lead


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
) -> Agent:
    """The agent the settings describe: the store, libraries, skills, tools (with
    ``search_docs`` on this store), the model broker and the sessions, opened once.
    Close it with ``close()``. A server passes the ``store``, ``skills``, ``toolbox`` and
    ``jobs`` it already has open (the embedding model is then loaded once, the job store
    opened once); they stay open when the agent closes: it closes only what it opened
    here. With a workspace (``tools_root``) the model may hand long tasks to a job
    (``delegate_job`` on ``jobs``, else on the settings' job store, opened here).
    ``on_tool_use`` and ``on_search``: the agent's observers (``Agent``)."""
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
        if settings.tools_root is not None and "delegate_job" not in toolbox.registry:
            # Jobs run in the workspace: with one, the model may hand long tasks to a job.
            if jobs is None:
                jobs = open_jobs(settings)
                opened.callback(jobs.close)
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
        tool_workers=settings.agent_tool_workers,
        on_tool_use=on_tool_use,
        on_search=on_search,
    )
