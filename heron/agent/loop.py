"""The generative loop: the prompt of a turn, then model calls and tool runs until the
model answers (``heron.agent.agent``, step 6).

Every model call is streamed, ``Agent.ask``'s too, so that ``heron.agent.guard`` can stop
a looping model after a few tokens rather than at ``max_tokens``, and a model that gives
its prompt back before any of it is shown (issue 44: SmolLM2-135M answers with the
passage headers and Heron's closing instruction). Either way the loop stops and says why
(``degenerate``, ``fallback``), and the agent gives the extractive answer instead. A
call's tool arguments are checked for the prompt too; where no extractive answer can
stand in (the client forced a call of its tools, or asked for a ``response_format``),
an echo is a ``ProviderError``. A call that writes text (tool choice ``auto`` or
``none``) gets ``PENALTIES`` where the request left the penalties unset and the provider
takes them; a forced call writes JSON and gets none.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from heron.agent.answer import AgentEvent, AnswerMode, Citation, Token, ToolUse, ToolUsed
from heron.agent.execute import ToolExecutor, run_calls, tool_content
from heron.agent.guard import EchoGuard, RepetitionGuard, Scaffold, repeats
from heron.agent.prompt import skill_lines, system_prompt, user_prompt, written
from heron.agent.turn import Turn
from heron.core.caller import Caller
from heron.core.cancel import check_gone
from heron.core.chat import ChatRequest, Completion, Message, Sampling, TextDelta, ToolCall, Usage
from heron.core.tools import Tool
from heron.errors import HeronError, InputError
from heron.llm import Broker
from heron.llm.errors import ProviderError
from heron.llm.payload import (
    CHARS_PER_TOKEN,
    estimate_tokens,
    message_chars,
    tokens_of,
    tool_chars,
)
from heron.tools.registry import ToolRegistry

T = TypeVar("T")

#: Penalties on calls that write text (OpenAI's scale, -2 to 2): enough to break a
#: small model's loops, too little to bend a good model's wording.
PENALTIES = Sampling(frequency_penalty=0.5, presence_penalty=0.3)
#: Providers whose API takes both penalties (Anthropic's refuses them).
PENALTY_PROVIDERS = frozenset({"openai", "local"})
#: Why a guard stopped the model's text (``Loop.fallback``; the answer's ``fallback`` and
#: ``finish_detail``): it looped, or it gave back Heron's prompt.
FALLBACKS = ("degenerate", "echoed_prompt")

log = logging.getLogger("heron.agent")

#: ``on_tool_use(actor, use, room)``: told of each tool call the loop ran (``Agent``), with
#: the conversation's room (``Turn.room``; ``""``: the default room).
ToolHook = Callable[[str, ToolUse, str], None]
#: ``on_search(actor, query, room)``: told of each grounding search of the libraries.
SearchHook = Callable[[str, str, str], None]


def tell(hook: Callable[[str, T, str], None] | None, actor: str, what: T, room: str) -> None:
    """``hook(actor, what, room)`` when there is a hook: an observer (the interventions'
    detectors) that fails is logged and never fails the answer."""
    if hook is None:
        return
    try:
        hook(actor, what, room)
    except HeronError as exc:
        log.warning("an observer of the agent failed: %s", exc)


@dataclass
class Prompt:
    """The first request's parts; ``fit`` shrinks them to the model's context window."""

    message: str
    passages: list[tuple[Citation, str]]
    skills: str
    tools: list[Tool]  # Heron's routed tools
    history: list[Message]  # before the grounded user message
    forced: str | None  # the first tool, when forced
    instructions: str = ""
    tail: list[Message] = field(default_factory=list)  # after it: a continued turn
    client_tools: list[Tool] = field(default_factory=list)

    def messages(self) -> list[Message]:
        system, user = self.messages_around()
        return [system, *self.history, user, *self.tail]

    def all_tools(self) -> tuple[Tool, ...]:
        """The client's first: ``payload.fit`` keeps the first tools when a model takes
        fewer, and the client asked for its own."""
        return (*self.client_tools, *self.tools)

    def tokens(self) -> int:
        """The broker's own estimate, so what fits here fits there."""
        return estimate_tokens(ChatRequest(tuple(self.messages()), self.all_tools()))

    def fit(self, room: int) -> list[str]:
        """Drop, until the prompt fits ``room`` tokens: earlier turns (oldest first), then
        skills, then Heron's tools (the forced one last), then passages from the last.
        The message, the instructions, the client's tools and a continued turn's tool
        results stay. Returns notes saying what went.

        Linear in the prompt: each message and tool is measured once
        (``heron.llm.payload.message_chars``) and what is dropped is subtracted; only the
        system and user messages, which depend on what is left, are measured again."""
        dropped: Counter[str] = Counter()
        # A turn is dropped whole, up to the next user message, so an assistant's tool
        # calls never lose their results.
        fixed = sum(map(message_chars, self.tail)) + sum(map(tool_chars, self.client_tools))
        tools = [tool_chars(t) for t in self.tools]
        # after[i]: the characters of history[i:]; a turn starts at each user message.
        after = [0] * (len(self.history) + 1)
        for i in range(len(self.history) - 1, -1, -1):
            after[i] = after[i + 1] + message_chars(self.history[i])
        starts = iter([i for i, m in enumerate(self.history) if i and m.role == "user"])
        first = 0  # the history kept is self.history[first:]

        def tokens() -> int:
            around = sum(map(message_chars, self.messages_around()))
            return tokens_of(fixed + sum(tools) + after[first] + around)

        while tokens() > room:
            if first < len(self.history):
                first = next(starts, len(self.history))
                dropped["earlier turns"] += 1
            elif self.skills:
                self.skills = ""
                dropped["skill blocks"] += 1
            elif len(self.tools) > (1 if self.forced else 0):
                self.tools = self.tools[:-1]
                tools.pop()
                dropped["tools"] += 1
            elif self.passages:
                self.passages = self.passages[:-1]
                dropped["passages"] += 1
            else:
                break  # the message alone: ``check`` made sure it fits
        self.history = self.history[first:]
        return [f"dropped {n} {what} to fit the context window" for what, n in dropped.items()]

    def scaffold(self, results: Sequence[Message] = ()) -> Scaffold:
        """What of the prompt Heron wrote, for the echo guard (``heron.agent.guard``):
        its rules, headers, skill framing and tools' descriptions. What it framed
        is content, which an answer may quote: the message, the client's instructions,
        history and tools, the passages, the skills' lines and the tool ``results`` the
        loop has added since."""
        content = [
            self.message,
            self.instructions,
            *skill_lines(self.skills),
            *(text for _, text in self.passages),
            *(m.content for m in (*self.history, *self.tail, *results)),
            *(t.description for t in self.client_tools),
        ]
        return Scaffold.of(written(self.skills, self.tools), content)

    def messages_around(self) -> tuple[Message, Message]:
        """The system and user messages as the prompt now has them."""
        system = system_prompt(
            self.skills, tools=bool(self.tools or self.client_tools), instructions=self.instructions
        )
        return Message("system", system), Message("user", user_prompt(self.message, self.passages))


@dataclass(frozen=True)
class LoopLimits:
    """What bounds a turn's loop: ``max_steps`` model calls (``agent_max_steps``), an
    answer of ``max_tokens`` when the turn sets none (``agent_max_tokens``), each tool
    call ``tool_timeout`` seconds (``agent_tool_timeout``), and the prompt tokens the
    model takes (``room``: its context window, the answer's kept aside)."""

    max_steps: int
    max_tokens: int
    tool_timeout: float
    room: int


class Loop:
    """Model calls and tool runs until the model answers (``heron.agent.agent``, step 6).

    It is handed what it calls: the ``broker``, the tool ``executor`` and the
    ``registry`` the tools run from, its ``limits``, and ``on_tool_use``, told of each
    tool call it ran (``tell``). ``notes`` is the turn's list: the loop adds to it."""

    def __init__(
        self,
        turn: Turn,
        prompt: Prompt,
        *,
        broker: Broker,
        executor: ToolExecutor,
        registry: ToolRegistry,
        limits: LoopLimits,
        on_tool_use: ToolHook | None,
        streaming: bool,
        notes: list[str],
        mode: AnswerMode,
        caller: Caller | None = None,
    ) -> None:
        self.req = turn
        self.caller = caller  # the conversation the tools are called in (heron.core.caller)
        self.broker = broker
        self.executor = executor
        self.registry = registry
        self.limits = limits
        self.on_tool_use = on_tool_use
        self.messages = prompt.messages()
        self.offered = {t.name: t for t in prompt.tools}
        self.client = {t.name: t for t in prompt.client_tools}
        self.tools_sent = prompt.all_tools()
        self.forced = prompt.forced
        self.model_alias = turn.model
        self.streaming = streaming
        self.notes = notes
        # An extractive answer calls the model only for a forced tool's arguments.
        self.extractive = mode == "extractive"
        self.text = ""
        self.tools: list[ToolUse] = []
        self.client_calls: list[ToolCall] = []
        self.usage = Usage()
        self.model = ""
        self.model_seconds = 0.0
        self.tool_seconds = 0.0
        self.steps = 0
        self.finish_reason = "stop"
        self.finish_detail: str | None = None  # Heron's own reason: a loop guard's
        # Why a guard stopped a call, in words ("on repeating the words ..."), and the
        # fallback that asks for (one of ``FALLBACKS``).
        self.degenerate: str | None = None
        self.fallback: str | None = None
        self.prompt = prompt
        self.first_messages = len(self.messages)
        spec = broker.table.spec(turn.model)
        self.penalize = spec.provider in PENALTY_PROVIDERS
        # A model declared too weak to write answers, asked to anyway: cut off at Heron's
        # budget, its answer is as unreadable as a loop (a capable one's is just long).
        self.weak = spec.capabilities.answers == "extractive"
        # Structured output repeats its keys by design: no guard there.
        self.guard = not turn.sampling.response_format

    def sampling_for(self, *, text_call: bool) -> Sampling:
        """The request's sampling, its answer cap filled in, and ``PENALTIES`` where it
        left them unset on a call that writes text (a forced call writes JSON)."""
        sampling = self.req.sampling
        cap = sampling.max_tokens or self.limits.max_tokens
        sampling = replace(sampling, max_tokens=cap)
        if text_call and self.penalize:
            sampling = replace(
                sampling,
                frequency_penalty=_either(sampling.frequency_penalty, PENALTIES.frequency_penalty),
                presence_penalty=_either(sampling.presence_penalty, PENALTIES.presence_penalty),
            )
        return sampling

    def _choice(self, step: int, tools: Sequence[Tool]) -> str:
        # Forcing on later turns too would make the model call the tool forever.
        if step > 1:
            return "auto"
        choice = self.forced or self.req.tool_choice
        if choice in ("auto", "required") or any(t.name == choice for t in tools):
            return choice
        return "auto"  # a forced Heron tool, on a last call that offers only the client's

    def _forces_client(self, choice: str) -> bool:
        """The call must be one of the client's tools (``required`` or one by name)."""
        return choice in self.client or (choice == "required" and bool(self.client))

    def _check_called(self, choice: str, completion: Completion, cap: int | None) -> None:
        """Raise when the model did not make the call the client's ``tool_choice`` asked
        for: never text, nor another tool's call, in its place. ``InputError`` (a 400)
        when the request's own ``max_tokens`` (``cap``) cut the call short; else
        ``ProviderError`` (a 502): the model ran past Heron's budget
        (``agent_max_tokens``) or did not follow ``tool_choice`` (the local model cannot
        ignore it: a grammar holds it to the tools)."""
        calls = completion.tool_calls
        if any(c.name in self.client and c.error is None for c in calls):
            return
        wanted = ", ".join(self.client) if choice == "required" else choice
        wanted = f"one of {wanted}" if choice == "required" and len(self.client) > 1 else wanted
        alias = completion.model or self.broker.table.spec(self.model_alias).alias
        cut = completion.finish_reason == "length" or (
            cap is not None and completion.usage.completion_tokens >= cap
        )
        if calls and cut and self.req.sampling.max_tokens is not None:
            raise InputError(
                f"max_tokens ({cap}) cut the model's call of {wanted} before its arguments "
                "were whole; send a larger max_tokens, or leave it out."
            )
        if calls and cut:
            raise ProviderError(
                alias,
                f"its call of {wanted} ran past the {cap}-token budget "
                "(HERON_AGENT_MAX_TOKENS) before its arguments were whole. Send the request "
                "again, or a max_tokens large enough for the arguments.",
            )
        made = "in text"
        if calls:
            made = "with a call it could not make: " + "; ".join(
                c.error or f"{c.name!r} is not a tool sent" for c in calls
            )
        raise ProviderError(
            alias,
            f"did not call {wanted}, which tool_choice asked for, and answered {made}. "
            "Send the request again, or choose a model that follows tool_choice.",
        )

    def run(self) -> Iterator[AgentEvent]:
        most = self.limits.max_steps
        for step in range(1, most + 1):
            self.steps = step
            request, choice = self._request(step, most)
            text_call = choice in ("auto", "none")
            # A forced call's text is streamed once the call is known good (below).
            guarded = self.guard and text_call
            results = [m for m in self.messages[self.first_messages :] if m.role == "tool"]
            scaffold = self.prompt.scaffold(results)
            completion = yield from self._call(request, scaffold, guarded=guarded, shown=text_call)
            self.model_seconds += completion.seconds
            self.usage = self.usage + completion.usage
            self.model = completion.model or self.model
            if self._forces_client(choice):
                self._check_called(choice, completion, request.sampling.max_tokens)
            completion = self._unechoed(choice, completion, scaffold, text_call=text_call)
            if self.streaming and not text_call and completion.text:
                yield Token(completion.text)
            if self.degenerate is not None or not completion.tool_calls:
                self.text = completion.text
                self.finish_reason = completion.finish_reason
                return
            if self._client_called(completion):
                return
            yield from self._use_tools(completion, choice)
            if self.extractive:
                return  # the tools' results are the answer (``Agent._extract``)
        # Only a model that calls tools when offered none gets here.
        self.finish_detail = "max_steps"
        self.notes.append(f"stopped after {most} model calls (HERON_AGENT_MAX_STEPS)")

    def _request(self, step: int, most: int) -> tuple[ChatRequest, str]:
        """The request of model call ``step`` (of ``most``), and its tool choice."""
        # A Heron tool's result needs one more call to be read, so the last call is
        # offered none of Heron's; a call of the client's ends the turn, so theirs stay.
        tools = self.tools_sent if step < most else tuple(self.client.values())
        if tools and self.req.tool_choice != "none":
            choice = self._choice(step, tools)
        else:
            choice, tools = "none", ()
        sampling = self.sampling_for(text_call=choice in ("auto", "none"))
        request = ChatRequest(
            tuple(self.messages),
            tools,
            choice,
            max_tokens=sampling.max_tokens,
            temperature=sampling.temperature,
            sampling=sampling,
        )
        return request, choice

    def _client_called(self, completion: Completion) -> bool:
        """Whether ``completion`` called the client's tools, which ends the turn with
        those calls (its calls of Heron's tools dropped, and said so)."""
        calls = completion.tool_calls
        theirs = [c for c in calls if c.name in self.client]
        if not theirs:
            return False
        self.client_calls, self.text, self.finish_reason = theirs, completion.text, "tool_calls"
        if len(theirs) < len(calls):
            self.notes.append(
                f"dropped {len(calls) - len(theirs)} call(s) to Heron's tools: the "
                "turn ended with the client's tool calls"
            )
        return True

    def _use_tools(self, completion: Completion, choice: str) -> Iterator[AgentEvent]:
        """Run ``completion``'s calls of Heron's tools and add their results to the
        messages, each result a share of the context window left; each use yielded."""
        calls = completion.tool_calls
        start = time.perf_counter()
        forced = self.forced if choice == self.forced else None
        answered = shown = self._run_calls(calls, forced)
        if forced:
            calls, answered, shown = self._defaults_for_refused(calls, answered)
        self.tool_seconds += time.perf_counter() - start
        self.messages.append(Message("assistant", completion.text, calls))
        # The results share what the context window has left.
        used = estimate_tokens(ChatRequest(tuple(self.messages), self.tools_sent))
        share = max(0, self.limits.room - used) * CHARS_PER_TOKEN // len(answered)
        self.messages += [
            Message("tool", tool_content(use, share), tool_call_id=use.id, name=use.name)
            for use in answered
        ]
        for use in shown:
            self.tools.append(use)
            tell(self.on_tool_use, self.req.user, use, self.req.room or "")
            yield ToolUsed(use)

    def _run_calls(self, calls: Sequence[ToolCall], forced: str | None) -> list[ToolUse]:
        return run_calls(
            calls,
            self.offered,
            self.registry,
            timeout=self.limits.tool_timeout,
            forced=forced,
            executor=self.executor,
            caller=self.caller,
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

    def _stop(self, reason: str, fallback: str) -> None:
        """Stop the turn's model text: ``reason`` in words, ``fallback`` one of
        ``FALLBACKS``; the agent gives the extractive answer instead."""
        self.degenerate, self.fallback = reason, fallback

    def _unechoed(
        self, choice: str, completion: Completion, scaffold: Scaffold, *, text_call: bool
    ) -> Completion:
        """``completion``, checked for the prompt where the stream's guard did not read
        it: the calls' arguments (and the raw text of arguments that did not parse) and a
        forced call's text (stopping that stream would have lost the call). An echo in a
        call stops the turn as a streamed one does; where nothing can stand in for what
        the model wrote (a call the client forced, a ``response_format`` answer) it is a
        ``ProviderError``. A forced call's echoed text is dropped, the call kept."""
        alias = completion.model or self.broker.table.spec(self.model_alias).alias
        if self.fallback == "echoed_prompt" and self.req.sampling.response_format:
            raise ProviderError(
                alias,
                "gave back Heron's own prompt in its structured answer, which is withheld. "
                "Send the request again, or choose a larger model.",
            )
        for call in completion.tool_calls:
            reason = scaffold.echo(_call_text(call))
            if reason is None:
                continue
            if self._forces_client(choice):
                raise ProviderError(
                    alias,
                    f"gave back Heron's own prompt in the arguments of its call of {call.name}, "
                    "which is withheld. Send the request again, or choose a larger model.",
                )
            self._stop(reason, "echoed_prompt")
            return completion
        if not text_call and completion.text and scaffold.echo(completion.text):
            self.notes.append(
                "withheld the text the model wrote beside its tool call: it gave back Heron's "
                "own prompt"
            )
            return replace(completion, text="")
        return completion

    def _call(
        self, request: ChatRequest, scaffold: Scaffold, *, guarded: bool, shown: bool = True
    ) -> Generator[AgentEvent, None, Completion]:
        """One model call, always streamed so that the guards can stop it early (an
        ``ask`` included: a looping small model would otherwise run to ``max_tokens``);
        tokens are yielded only when the caller streams and ``shown``. What is shown has
        passed the echo guard (``EchoGuard``), which holds back what may still become an
        echo of ``scaffold``; ``guarded`` adds the repetition guard."""
        broker = self.broker
        guard = RepetitionGuard() if guarded else None
        # A forced call's text is checked whole, with the call (``_unechoed``).
        echo = EchoGuard(scaffold) if shown else None
        pieces: list[str] = []
        completion = None
        started = time.perf_counter()
        events = broker.stream(request, model=self.model_alias)
        try:
            for event in events:
                check_gone()  # a client that left stops the model at its next token
                if not isinstance(event, TextDelta):
                    completion = event.completion
                    continue
                if guard is not None and guard.feed(event.text):
                    self._stop(guard.reason or "", "degenerate")
                    break
                safe = event.text if echo is None else echo.feed(event.text)
                if echo is not None and echo.reason is not None:
                    self._stop(echo.reason, "echoed_prompt")
                    break
                pieces.append(event.text)
                if self.streaming and shown and safe:
                    yield Token(safe)
        except ProviderError:
            if self.streaming or not pieces:
                raise
            # The stream broke after text began, so the broker could not retry it; a
            # whole call can be (what ``ask`` did before it streamed). Nothing was shown.
            completion = self._whole_call(request, scaffold, guarded=guard is not None, shown=shown)
            echo = None
        finally:
            events.close()
        if completion is not None and guard is not None and self.degenerate is None:
            if reason := guard.end():
                self._stop(reason, "degenerate")
            cut = completion.finish_reason == "length" and self.req.sampling.max_tokens is None
            if cut and self.weak:  # Heron's budget; a caller who set max_tokens gets the cut
                self._stop(f"on to its {request.sampling.max_tokens}-token budget", "degenerate")
        if completion is not None and echo is not None and self.degenerate is None:
            rest = echo.end()  # the last words, whole now
            if echo.reason is not None:
                self._stop(echo.reason, "echoed_prompt")
            elif self.streaming and rest:
                yield Token(rest)
        if completion is not None:
            return completion
        if self.degenerate is None:
            raise AssertionError("the broker's stream ended without Done")
        return self._stopped_early(request, "".join(pieces), started)

    def _whole_call(
        self, request: ChatRequest, scaffold: Scaffold, *, guarded: bool, shown: bool
    ) -> Completion:
        """``request`` called again, not streamed, its answer read whole by the guards a
        stream has (the repetition guard where ``guarded``, the echo guard where
        ``shown``)."""
        completion = self.broker.complete(request, model=self.model_alias)
        if guarded and (reason := repeats(completion.text)):
            self._stop(reason, "degenerate")
        elif shown and (reason := scaffold.echo(completion.text)):
            self._stop(reason, "echoed_prompt")
        return completion

    def _stopped_early(self, request: ChatRequest, text: str, started: float) -> Completion:
        """The completion of a stream a guard stopped at ``text``: no usage came, so it
        is estimated."""
        return Completion(
            text,
            usage=Usage(estimate_tokens(request), len(text) // CHARS_PER_TOKEN + 1),
            model=self.broker.table.spec(self.model_alias).alias,
            finish_reason="degenerate",
            seconds=round(time.perf_counter() - started, 4),
        )


def _call_text(call: ToolCall) -> str:
    """A call's arguments as the text an echo would be in: each string value on its own
    line (JSON would escape a header's line break), and a parse error's raw text."""
    strings: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(call.arguments)
    return "\n".join([*strings, call.error or ""])


def _either(value: float | None, default: float | None) -> float | None:
    return default if value is None else value
