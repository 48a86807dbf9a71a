"""``Agent``: a ``Turn`` in, a grounded answer with citations out.

One ``ask`` runs three phases over small values (``_run``):

1. **ground** (``_ground`` -> ``_Grounded``): the checks first (an empty message, one
   over ``MAX_MESSAGE_BYTES`` or over the model's context window is refused with
   ``InputError``, as are fields that do not fit together, ``Turn.validate``); then
   retrieval (``heron.agent.retrieval``): the libraries' search (``heron.libraries.search``)
   on the message (``Found``), Heron's own docs (the built-in ``heron`` library) only when
   the message names Heron or the caller chose that library; routing
   (``heron.agent.routing``): the tools that fit (``heron.tools``), those above
   ``agent_tool_safety`` (the turn's ``tool_safety``) or without a handler left out, none
   when the client sent its own tools; skills (``heron.agent.skilluse``):
   ``SkillIndex.context_for``, kept when the best skill fits at all (generated answers
   only); triage (``heron.agent.triage``): ``docs`` keeps the passages with their
   citations, ``tools`` with confidence forces the first call to the best tool; the
   first prompt, cut to the model's context window (``Prompt.fit``);
2. **respond** (``_respond`` -> ``_Reply``), in one of two modes (``Turn.answer``, else
   the model's ``answers`` capability in models.yml):

   - ``extractive``: the passages' own sentences that answer the message, each cited
     (``heron.agent.extractive``), or the result of a job the conversation delegated
     when it answers the message better (``heron.agent.recall.answering``, cited as
     the job); no model call, except a one-line lead when the model
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
   the turn saved to the session, the skills it used told to their usage log, the tools
   that served it taught the request.

``open_agent`` (``heron.wiring``) opens the parts and builds one.

>>> agent = open_agent(Settings())                             # doctest: +SKIP
>>> answer = agent.ask(Turn("How does Heron pick tools?"))     # doctest: +SKIP
>>> answer.citations[0].page                                   # doctest: +SKIP
'tools'
"""

from __future__ import annotations

import contextlib
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
    Related,
    Token,
    ToolUse,
    finish,
)
from heron.agent.execute import TOOL_WORKERS, ToolExecutor
from heron.agent.extractive import (
    Extract,
    Limits,
    closest,
    compose,
    passage_body,
    tool_summary,
)
from heron.agent.followup import last_reply
from heron.agent.guard import Scaffold, repeats
from heron.agent.loop import Loop, LoopLimits, Prompt, SearchHook, ToolHook, tell
from heron.agent.prompt import lead_prompt, lead_written, system_prompt
from heron.agent.recall import JobResult, Recall, answering, interleave
from heron.agent.retrieval import EXTRACTIVE_PASSAGES, Found, Retriever
from heron.agent.routing import ToolOffer
from heron.agent.sessions import Sessions, check_session_id, new_session_id
from heron.agent.skilluse import fits, record_skill_use, skill_query
from heron.agent.triage import DOCS_TAG, Evidence, Triage, triage
from heron.agent.turn import Turn
from heron.agent.words import Surface, nothing_found, say, speaks
from heron.core.caller import Caller
from heron.core.chat import ChatRequest, Message
from heron.core.tools import Safety, Tool
from heron.embed import calibration_of, embed_queries
from heron.errors import InputError
from heron.libraries import Reranker, Result
from heron.llm import Broker
from heron.llm.broker import count_tokens
from heron.llm.errors import ProviderError
from heron.llm.payload import CHARS_PER_TOKEN, estimate_tokens
from heron.resource import Resource
from heron.settings import Settings
from heron.skills import SkillContext, SkillIndex
from heron.store import Store
from heron.tools import RoutedTool, Toolbox
from heron.tools.ceiling import within

MAX_MESSAGE_BYTES = 1 << 20
#: Tokens of an extractive answer's lead line.
LEAD_TOKENS = 48


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
        recall: Recall | None = None,
    ) -> None:
        """The parts are handed over open, and stay open when the agent closes (the
        ownership rule, ``heron.store.base``): ``resources`` holds what was opened for
        this agent alone (``open_agent`` fills it), and ``close()`` closes that. The
        agent owns its tool executor: at most ``tool_workers`` tool calls at once,
        joined by ``close()``.

        Observers, told with the turn's ``user`` (the actor) and never failing a turn (a
        ``HeronError`` they raise is logged): ``on_tool_use(actor, use, room)`` after each
        tool call the agent ran, ``on_search(actor, message, room)`` after each grounding
        search of the libraries, with the conversation's room (``""``: the default). A
        server passes its interventions' detectors here.

        ``recall(session_id)``: what joined a conversation besides its turns (the results
        of the jobs it delegated, ``heron.agent.recall``), replayed with its history."""
        self.settings = settings
        self.recall = recall
        self.store = store
        self.skills = skills
        self.toolbox = toolbox
        self.broker = broker
        self.sessions = sessions
        self.on_tool_use = on_tool_use
        self.on_search = on_search
        self._resources = resources or contextlib.ExitStack()
        self.executor = ToolExecutor(tool_workers)
        # The parts look the broker up per call: a models reload replaces ``self.broker``.
        self.retriever = Retriever(settings, store, lambda: self.broker, reranker=reranker)
        self.offer = ToolOffer(settings, toolbox, lambda: self.broker)

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
        answer = max_tokens or self.settings.agent.max_tokens
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
        answer = max_tokens or self.settings.agent.max_tokens
        return self.broker.capabilities(model).context_window - answer

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

    def _ceiling(self, turn: Turn) -> Safety:
        """The most harmful of Heron's tools ``turn`` may run (``Turn.tool_safety``)."""
        return turn.tool_safety or self.settings.agent.tool_safety

    def _delegates(self, turn: Turn) -> bool:
        """Whether ``turn`` may delegate jobs beyond its ceiling (``Turn.delegate``)."""
        return self.settings.agent.delegate if turn.delegate is None else turn.delegate

    def _history(self, turn: Turn, session_id: str) -> tuple[list[Message], list[Message]]:
        """``(before, after)``: the messages before the grounded user message, and after
        it (a continued turn's tool calls and results)."""
        if turn.history is None:
            exchanges = self.sessions.exchanges(session_id)
            recalled = self.recall(session_id) if self.recall is not None else []
            return interleave(exchanges, recalled), []
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

    def thresholds(self, message: str) -> Thresholds:
        """The cosines ``message`` is judged by, on the scale of the model that embeds it
        (``calibration_of``: MiniLM's are no use under e5, and the multilingual profile
        reads each language with its own model); the settings' docs and tool values
        where set."""
        calibration = calibration_of(self.store.embedder, message)
        docs, tool = self.settings.agent.docs_threshold, self.settings.agent.tool_threshold
        return Thresholds(
            calibration.skill,
            calibration.weak,
            calibration.docs if docs is None else docs,
            calibration.tool if tool is None else tool,
            calibration.support,
        )

    # -- phase 1: ground -----------------------------------------------------------------

    def _ground(self, turn: Turn, record: _Record) -> _Grounded:
        """Retrieval, routing, skills and triage: the first prompt, cut to the window."""
        session_id = check_session_id(turn.session_id) if turn.session_id else new_session_id()
        mode = self._mode(turn)
        thresholds = self.thresholds(turn.message)
        with record.clock("retrieval"):
            before, after = self._history(turn, session_id)
            vector = embed_queries(self.store.embedder, [turn.message])[0]
            found = self.retriever.ground(
                turn.message,
                vector,
                before,
                docs_threshold=thresholds.docs,
                library=turn.library,
                model=turn.model,
            )
            if found.grounding.libraries:
                tell(self.on_search, turn.user, turn.message, turn.room or "")
        with record.clock("routing"):
            routed = self._route(turn, vector)
        with record.clock("skills"):
            # Every turn's message is a skill query (the hit rate's), extractive ones too;
            # only a generated answer has a prompt for the skills that fit.
            query = skill_query(self.skills, turn.message)
            fitting = query is not None and fits(query, thresholds.skill)
            skills = query if fitting and mode == "generative" else None
        with record.clock("prompt"):
            decision = triage(
                turn.message,
                found.results,
                routed,
                names=self.retriever.names(),
                vocabulary=self.retriever.vocabulary(),
                library=turn.library,
                docs_threshold=thresholds.docs,
                tool_threshold=thresholds.tool,
            )
            job = self._job(turn, mode, decision, vector, before)
            # What the passages' notes say ("these are the closest") is not about an
            # answer that a job's result gives instead.
            notes = record.notes if job is None else []
            passages, evidence = self._passages(mode, decision, found, thresholds, notes)
            prompt = self._prompt(turn, decision, passages, skills, routed, before, after)
            if mode == "generative" or prompt.forced:
                record.notes += prompt.fit(self._room(turn.model, turn.sampling.max_tokens))
        return _Grounded(
            session_id,
            mode,
            found,
            decision,
            passages,
            skills,
            prompt,
            query,
            evidence,
            job,
            vector,
        )

    def _route(self, turn: Turn, vector: np.ndarray) -> list[RoutedTool]:
        """The Heron tools offered for ``turn``: none where the client sends its own
        (the client decides what may happen, and Heron's would run here, unasked by
        it) or ``tool_choice`` is none."""
        if turn.tool_choice == "none" or turn.client_tools:
            return []
        return self.offer.route(
            turn.message,
            turn.model,
            vector,
            safety=turn.tool_safety,
            local=turn.local_tools,
            delegate=self._delegates(turn),
        )

    def _job(
        self,
        turn: Turn,
        mode: AnswerMode,
        decision: Triage,
        vector: np.ndarray,
        before: list[Message],
    ) -> JobResult | None:
        """The jobs' result an extractive answer gives, if one answers ``turn``; a model
        reads the jobs' results in its prompt instead (quotes need them weighed)."""
        if mode != "extractive":
            return None
        embedder, best = self.store.embedder, decision.docs_score
        return answering(turn.message, vector, before, embedder, best)

    def _passages(
        self,
        mode: AnswerMode,
        decision: Triage,
        found: Found,
        thresholds: Thresholds,
        notes: list[str],
    ) -> tuple[list[Result], Evidence]:
        """The passages the prompt holds, and the evidence they were chosen on: triage's,
        or for an extractive answer the closest ones when none fits closely but they are
        related (``Evidence``, with a note saying so), and the best page's other sections
        that match (an extractive answer has no prompt to fill)."""
        results = found.results
        count = EXTRACTIVE_PASSAGES if mode == "extractive" else self.settings.agent.passages
        passages = results[:count] if decision.kind == "docs" else []
        evidence = Evidence.of(
            decision.docs_score,
            found.peak,
            docs=thresholds.docs,
            weak=thresholds.weak,
            support_from=thresholds.support,
        )
        if mode == "extractive" and decision.kind == "knowledge" and results:
            if evidence.verdict == "unrelated":
                # A sentence that fits as closely as a fitting passage must is evidence
                # enough: its passage's vector is diluted by the rest of it.
                bodies = [
                    passage_body(self.retriever.passage(r, quoted=True)) for r in results[:count]
                ]
                query, vector = found.grounding.query, found.vector
                sentence = closest(query, vector, bodies, self.store.embedder)
                evidence = evidence.with_sentence(sentence)
            if evidence.verdict == "related":
                # Quoting the closest passages invents nothing; saying they fit would.
                passages = results[:count]
                notes.append(f"no passage fits closely ({evidence.why}); these are the closest")
        if mode == "extractive" and passages:
            passages = [passages[0], *self.retriever.sections(found), *passages[1:]]
        # A library still being indexed (or stopped half way) says so in every answer.
        notes += sorted({p.note for p in passages if p.note})
        return passages, evidence

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
        quoted = self._mode(turn) == "extractive"
        forced = decision.tool if confident and turn.tool_choice == "auto" else None
        return Prompt(
            turn.message,
            [
                (Citation.from_result(r.to_dict()), self.retriever.passage(r, quoted=quoted))
                for r in passages
            ],
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
            caller=Caller(
                session_id=grounded.session_id,
                user=turn.user,
                room=turn.room or "",
                # A turn that may not run programs hands on no job that writes unconfirmed.
                confirm_risky=not within("execute", self._ceiling(turn)),
            ),
        )
        if grounded.mode == "generative" or prompt.forced:
            yield from loop.run()
        citations = [c for c, _ in prompt.passages]
        fallback = loop.fallback  # a guard stopped the model: "degenerate", "echoed_prompt"
        if fallback is not None:
            record.notes.append(f"the model went {loop.degenerate}; stopped, and quoted instead")
        if grounded.mode == "extractive" or fallback:
            citations = yield from self._quote(turn, grounded, loop, record, fallback, streaming)
        elif not (grounded.passages or loop.tools or loop.client_calls or turn.continues):
            scope, score = list(grounded.found.grounding.libraries), grounded.decision.docs_score
            indexed = self.retriever.indexed()
            record.notes.append(
                nothing_found(
                    scope,
                    indexed,
                    score,
                    lang=speaks(turn.message),
                    surface=turn.surface,
                    generated=True,
                )
            )
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
            if grounded.job is not None:
                text, short = self._recalled(turn, grounded.job, loop.tools), False
                citations, quoted = [grounded.job.citation], [text]
                record.notes.append(f"answered from the result of job {grounded.job.id}")
            else:
                text, quoted, used, short = self._extract(turn, grounded, loop.tools)
                citations = [passages[i][0] for i in used]  # the passages quoted
        if not fallback:
            lead = self._lead(turn, quoted, loop) if quoted else ""
            text = f"{lead}\n\n{text}" if lead else text
        text, cut = self._fit(turn, text)
        if cut or short:
            loop.finish_reason = "length"
            citations = [c for n, c in enumerate(citations, 1) if f"[{n}]" in text]
        if fallback and streaming:
            stopped = say(
                "stopped" if fallback == "degenerate" else "withheld", speaks(turn.message)
            )
            yield Token(f"\n\n{stopped}\n\n{text}")
        elif streaming:
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
        prompted = grounded.skills.skills if grounded.skills and grounded.prompt.skills else []
        record_skill_use(
            self.skills,
            turn.message,
            grounded.skill_query,
            prompted,
            reply.loop.tools,
            reply.loop.text,
        )
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
        pages = {(c.library, c.page) for c in citations}  # a page cited at any section
        related = [
            Related(c, round(r.score, 4))
            for r in grounded.found.results[:EXTRACTIVE_PASSAGES]
            if (c := Citation.from_result(r.to_dict())) not in citations
            and (c.library, c.page) not in pages
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
            evidence=grounded.evidence,
        )

    # -- helpers of the phases -----------------------------------------------------------

    def _limits(self, turn: Turn) -> LoopLimits:
        settings = self.settings
        return LoopLimits(
            max_steps=settings.agent.max_steps,
            max_tokens=settings.agent.max_tokens,
            tool_timeout=settings.agent.tool_timeout,
            room=self._room(turn.model, turn.sampling.max_tokens),
        )

    def _extract(
        self, turn: Turn, grounded: _Grounded, uses: Sequence[ToolUse]
    ) -> tuple[str, list[str], tuple[int, ...], bool]:
        """The extractive answer to what was searched (``grounding.query``, with its
        vector): quotes from the prompt's passages (weighed by retrieval's scores), what
        the tools returned (``uses``), or what grounding found when there is neither; the
        quotes alone; the passages quoted, in the order of their markers; whether
        ``max_tokens`` left quotes out."""
        passages = grounded.prompt.passages
        parts, quotes, used, short = [], [], (), False
        lang = speaks(turn.message)
        if passages:
            tokens = turn.sampling.max_tokens
            bodies = [passage_body(text) for _, text in passages]
            grounding = grounded.found.grounding

            def quote(limits: Limits) -> Extract:
                found = grounded.found
                return compose(
                    grounding.query,
                    found.vector if found.reading is None else found.reading,
                    bodies,
                    self.store.embedder,
                    limits,
                    headings=[c.heading for c, _ in passages],
                    scores=[r.score for r in grounded.passages][: len(bodies)],
                    # The earlier questions' terms weigh less only beside the message's
                    # own: a model's rewrite is all the question, in words of its choosing.
                    latest=turn.message if grounding.how == "context" else None,
                    latest_vector=grounded.vector,
                    said=last_reply(grounded.prompt.history, words=None),
                )

            quoted = quote(Limits(chars=tokens * CHARS_PER_TOKEN if tokens else None))
            # Cut by max_tokens is what the answer would have said without it, and more
            # (OpenAI's finish_reason "length"); the sentences' vectors are cached.
            short = bool(tokens) and quote(Limits()).text != quoted.text
            quotes, used = [q.text for q in quoted.quotes], quoted.used
            parts.append(quoted.text or say("code_only", lang))
            evidence = grounded.evidence
            if quoted.text and evidence is not None and evidence.verdict == "related":
                # Said after the quotes: the answer still starts with what it found.
                parts.append(say("closest", lang))
        if uses:
            parts.append(tool_summary(uses))
        if not parts:
            parts.append(
                nothing_found(
                    list(grounded.found.grounding.libraries),
                    self.retriever.indexed(),
                    grounded.decision.docs_score,
                    lang=lang,
                    surface=turn.surface,
                    generated=False,
                )
            )
        return "\n\n".join(parts), quotes, used, short

    def _recalled(self, turn: Turn, job: JobResult, uses: Sequence[ToolUse]) -> str:
        """The extractive answer from a delegated job's result (``heron.agent.recall``),
        in the asker's language, cited as marker 1; then what the tools returned."""
        parts = [job.statement(speaks(turn.message), "[1]")]
        if uses:
            parts.append(tool_summary(uses))
        return "\n\n".join(parts)

    def _fit(self, turn: Turn, text: str) -> tuple[str, bool]:
        """``text`` within the turn's ``max_tokens`` as the model's tokenizer counts them
        (``count_tokens``, what ``/v1`` reports as ``completion_tokens``), and whether it
        was cut. The quotes were chosen on an estimate (``CHARS_PER_TOKEN``); a tokenizer
        that splits finer (numbers, names) still gets no more tokens than asked for."""
        tokens = turn.sampling.max_tokens
        if not tokens:
            return text, False
        spec = self.broker.table.spec(turn.model)
        models_dir = self.settings.models_dir
        if count_tokens(spec, [text], models_dir) <= tokens:
            return text, False
        words = text.split(" ")
        low, high = 0, len(words)  # the most words that fit: found by halving
        while low < high:
            middle = (low + high + 1) // 2
            if count_tokens(spec, [" ".join(words[:middle]) + " …"], models_dir) <= tokens:
                low = middle
            else:
                high = middle - 1
        return (" ".join(words[:low]) + " …") if low else "", True

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
        # A lead that gives Heron's prompt back is no lead (issue 44): the quotes stand alone.
        prompt = Scaffold.of(lead_written(), [turn.message, turn.instructions, *quotes])
        return "" if repeats(lead) or prompt.echo(lead) else lead


@dataclass(frozen=True)
class Thresholds:
    """The cosines a message is judged by (``Agent.thresholds``): skills join the prompt
    from ``skill`` (``context_for`` alone returns its best, fitting or not); passages from
    ``docs``, under which an extractive answer still quotes the closest, with a note, from
    ``weak`` or a ``support`` (``Evidence``; under both they are unrelated); a tool is
    forced on the first turn from ``tool``."""

    skill: float
    weak: float
    docs: float
    tool: float
    support: float = 0.0


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
    evidence: Evidence | None = None
    #: The delegated job whose result answers an extractive turn (``recall.answering``).
    job: JobResult | None = None
    #: The message's own vector (``found.vector`` is the query searched, which a
    #: follow-up builds from the conversation).
    vector: np.ndarray | None = None


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
