"""OpenAI's Chat Completions API in front of the agent: any OpenAI client gets grounded,
cited answers. ``POST /v1/chat/completions`` (plain or ``stream: true``) and
``GET /v1/models`` (the aliases of models.yml, and each as ``raw/ALIAS``);
``/v1/embeddings`` is ``heron.server.doors.embeddings``.

A model named ``raw/ALIAS`` (``raw/default``: the default alias) is the broker alone, no
grounding: the messages, tools and fields go to the alias's model as they are, with
Heron's routing, retries, fallbacks and cooldowns, and a stream is re-emitted chunk by
chunk as the provider sends it (``raw_completions``). Every other model name is the
grounded agent, below.

What a request says reaches the agent as one ``heron.agent.turn.Turn`` (``turn``):

- ``messages``: system (and ``developer``) messages become the agent's ``instructions``;
  the last user message is the question the libraries are searched for; the turns
  before it are the ``history`` (no ``session_id`` needed). Content may be a string or
  a list of text parts; other parts (images, audio, files) are refused.
- sampling (``max_completion_tokens`` or ``max_tokens``, ``temperature``, ``top_p``,
  ``stop``, ``seed``, ``presence_penalty``, ``frequency_penalty``, ``response_format``)
  goes to the model as ``heron.llm.Sampling``; a provider that cannot honour one refuses
  it, and that is a 400 naming it. ``n`` above 1, ``logprobs``, ``logit_bias`` and the
  legacy ``functions`` are refused (400) rather than silently dropped. OpenAI's other
  fields (``PASSED_FIELDS``: ``parallel_tool_calls``, ``reasoning_effort``,
  ``service_tier``, ``store``, ``metadata``, ``modalities``/``audio``, ``prediction``,
  ``web_search_options``...) are a raw model's (sent to its provider); on a grounded
  answer only a neutral value is taken (``modalities: ["text"]``, ``store: false``,
  ``service_tier: "auto"``, ``parallel_tool_calls: true``) and any other is a 400 naming
  the field (``grounded_fields``). The table per field is in docs/llm.md.
- ``tools`` / ``tool_choice`` are the client's: offered to the model alone, beside
  Heron's grounding (the passages) and none of Heron's tools; a call to one ends the
  turn and comes back as OpenAI ``tool_calls`` (``finish_reason: "tool_calls"``) for
  the client to run. ``required`` and a named function always come back as such calls
  (the local model is held to the tools by a grammar), or as an error saying why. The
  next request, whose messages end with the ``tool`` results, continues the turn.
- Heron's own tools run for a request without ``tools`` only up to
  ``openai_tool_safety`` (``HERON_OPENAI_TOOL_SAFETY``, default ``read``): by default
  no request here creates a job, writes a file or runs a program.
- Heron's own fields ride in the body (``extra_body`` in the OpenAI SDK): ``library``
  (search only it), ``session_id`` (a server-side conversation), ``answer``
  (``extractive`` or ``generative``; by default the model's ``answers`` capability, and
  generated for a request with tools, tool results or a JSON ``response_format``, which
  only a model can act on).

Answers carry ``citations`` beside ``choices``, a field standard clients ignore, with
``related`` (passages found, not quoted), ``grounding`` (the query searched, the libraries
it was searched in, and how a follow-up was made standalone), ``session_id``, ``mode`` and
``finish_detail``; in a stream they arrive on the last chunk
before ``data: [DONE]``. ``finish_reason`` is always one of OpenAI's (``stop``,
``length``, ``tool_calls``, ``content_filter``); Heron's own reason, when there is one,
is ``finish_detail``: ``degenerate`` (the model looped and was replaced by the
extractive answer), ``echoed_prompt`` (it gave Heron's prompt back, which no door shows:
``heron.agent.guard``), ``max_steps`` (the tool loop's guard), or a provider's reason
OpenAI has no word for; else ``null``. Unknown fields are ignored,
as OpenAI's API does.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.agent.turn import Turn
from heron.core.cancel import Gone
from heron.core.chat import (
    ChatRequest,
    Completion,
    Message,
    Sampling,
    StreamEvent,
    TextDelta,
    ToolCall,
)
from heron.core.schema_bounds import SchemaBounds, SchemaCheck, SchemaTooLarge
from heron.core.tools import Tool, parse_tool
from heron.errors import HeronError, InputError
from heron.keys import OverLimit
from heron.llm.budgets import patterns_allow, payer_of
from heron.llm.cache import CONTROL as CACHE_CONTROL
from heron.llm.payload import (
    NEUTRAL,
    PASSED_FIELDS,
    check_sampling,
    estimate_tokens,
    json_schema,
    parse_arguments,
)
from heron.server.features.keys import current_key, over_limit, reserve, spend_answer
from heron.server.hooks import NO_METHODS, endpoint, no_lifespan
from heron.server.http.contexts import runtime_of
from heron.server.http.events import event_stream, in_thread, message
from heron.server.http.gone import gone, unless_gone
from heron.server.http.replies import error_body, heron_error, invalid, openai_error, read_body
from heron.server.http.strictjson import StrictJSONResponse
from heron.server.runtime import Runtime
from heron.settings import Settings

if TYPE_CHECKING:  # the agent is opened on the first chat, and imported then too
    from heron.agent.answer import AgentEvent, Answer

T = TypeVar("T")

#: Roles whose messages are the agent's instructions (``developer`` is OpenAI's newer
#: name for ``system``).
INSTRUCTION_ROLES = ("system", "developer")


class Invalid(InputError):
    """A request Heron cannot honour as sent; the message names the field, ``param``
    too when it is one."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class Part(BaseModel):
    """One piece of a message's content; only text reaches the agent."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None
    refusal: str | None = None


class Function(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str | dict[str, Any] | None = None


class CallIn(BaseModel):
    """A tool call of an earlier assistant message, as the client sends it back."""

    model_config = ConfigDict(extra="allow")

    id: str
    type: str = "function"
    function: Function


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[Part] | None = None
    tool_calls: list[CallIn] | None = None
    tool_call_id: str | None = None


class NamedChoice(BaseModel):
    type: Literal["function"]
    function: Function


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class CompletionRequest(BaseModel):
    # Unknown fields are ignored, as OpenAI's API does; every known one is honoured or
    # refused by name (``refused_fields``).
    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    response_format: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedChoice | None = None
    n: int | None = Field(default=None, ge=1)
    logprobs: bool | None = None
    top_logprobs: int | None = None
    logit_bias: dict[str, float] | None = None
    functions: list[Any] | None = None
    function_call: Any = None
    user: str | None = Field(default=None, max_length=200)  # the actor interventions see
    # OpenAI's fields with no meaning of Heron's own (PASSED_FIELDS): a raw model's
    # provider takes them; a grounded answer takes only their neutral values.
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    service_tier: str | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = None
    modalities: list[str] | None = None
    audio: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    web_search_options: dict[str, Any] | None = None
    verbosity: str | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    # Heron's own, sent as extra_body.
    session_id: str | None = None
    library: str | None = None
    answer: Literal["extractive", "generative"] | None = None


def refused_fields(req: CompletionRequest) -> None:
    """Known fields Heron cannot honour: a 400 naming each, never a silent default."""
    if req.n is not None and req.n > 1:
        raise Invalid(
            f"n: Heron answers with one choice; got n={req.n}. Leave n out (or send 1) "
            "and send one request per answer wanted."
        )
    if req.logprobs or req.top_logprobs:
        raise Invalid("logprobs: Heron does not return log probabilities; leave it out.")
    if req.logit_bias:
        raise Invalid("logit_bias: Heron's models take no logit bias; leave it out.")
    if req.functions is not None or req.function_call is not None:
        raise Invalid(
            "functions: the legacy functions API is not served; send the same "
            'definitions as tools=[{"type": "function", "function": {...}}].'
        )


#: The model-name prefix of the broker alone (no grounding).
RAW_PREFIX = "raw/"
#: The route, for the error shape of a refusal (``heron.server.http.replies.for_path``).
PATH = "/v1/chat/completions"


def passed_fields(req: CompletionRequest) -> dict[str, Any]:
    """The request's ``PASSED_FIELDS`` that it set (``user`` included), by OpenAI's name."""
    return {name: getattr(req, name) for name in PASSED_FIELDS if getattr(req, name) is not None}


def grounded_fields(req: CompletionRequest) -> None:
    """A grounded answer takes a passed field only at its neutral value: the agent's
    model calls are Heron's own, so the client's provider options have nowhere to go."""
    for name, value in passed_fields(req).items():
        if name != "user" and value not in NEUTRAL.get(name, ()):
            raise Invalid(
                f"{name}: a grounded answer does not send {name} to its model; call the "
                f"model as {RAW_PREFIX}{req.model} (no grounding) to pass it, or leave it out."
            )


def _text(content: str | list[Part] | None, where: str) -> str:
    """A message's text: the string, or its text parts joined."""
    if not isinstance(content, list):
        return content or ""
    pieces = []
    for i, part in enumerate(content):
        if part.type == "text":
            pieces.append(part.text or "")
        elif part.type == "refusal":  # an assistant's refusal, sent back as history
            pieces.append(part.refusal or "")
        else:
            raise Invalid(
                f"{where}.content[{i}]: a {part.type!r} part; Heron's models read text "
                "only. Send the text, or describe the attachment in words."
            )
    return "".join(pieces)


@dataclass
class Conversation:
    """The request's messages as the agent takes them."""

    message: str
    instructions: str = ""
    history: list[Message] = field(default_factory=list)


def conversation(messages: list[ChatMessage]) -> Conversation:
    """Instructions, the question, and the turns around it.

    ``history`` is every turn before the last user message; when that message is
    followed by the model's tool calls and their ``tool`` results (the client ran them),
    those follow it in ``history`` too, so the turn goes on from there. Raises
    ``Invalid`` for a list the agent cannot answer (no user text, a tool result that
    answers no call, ...)."""
    instructions: list[str] = []
    turns: list[Message] = []
    question: int | None = None  # index in turns of the last user message with text
    for m in raw_messages(messages):
        if m.role == "system":
            if m.content.strip():
                instructions.append(m.content)
            continue
        turns.append(m)
        if m.role == "user" and m.content.strip():
            question = len(turns) - 1
    if question is None:
        raise Invalid("No user message with text; send at least one {'role': 'user', ...}.")
    after = turns[question + 1 :]
    if after and after[-1].role != "tool":
        raise Invalid(
            f"messages[{len(messages) - 1}]: the messages end with the {after[-1].role}'s; "
            "end with the user's next message, or with the tool results of the "
            "assistant's tool_calls."
        )
    history = turns[:question] + ((turns[question:]) if after else [])
    return Conversation(turns[question].content, "\n\n".join(instructions), history)


def _call(call: CallIn, where: str) -> ToolCall:
    if call.type != "function":
        raise Invalid(f"{where}.type: {call.type!r}; only function tool calls are served.")
    arguments, problem = parse_arguments(call.function.arguments)
    return ToolCall(call.id, call.function.name, arguments, problem)


def sampling(req: CompletionRequest) -> Sampling:
    """The request's sampling, checked; ``max_completion_tokens`` (OpenAI's newer name)
    wins over ``max_tokens``."""
    stop = [req.stop] if isinstance(req.stop, str) else req.stop or []
    options = Sampling(
        max_tokens=req.max_completion_tokens or req.max_tokens,
        temperature=req.temperature,
        top_p=req.top_p,
        stop=tuple(stop),
        seed=req.seed,
        presence_penalty=req.presence_penalty,
        frequency_penalty=req.frequency_penalty,
        response_format=req.response_format,
    )
    # Checked here too, not only by the broker: an extractive answer makes no model call.
    check_sampling(options)
    return options


def client_tools(req: CompletionRequest) -> tuple[list[Tool], str]:
    """The client's tools and ``tool_choice`` in Heron's form (a forced tool by name)."""
    tools = []
    for i, item in enumerate(req.tools or ()):
        if item.get("type", "function") != "function":
            raise Invalid(f"tools[{i}].type: {item.get('type')!r}; only function tools are served.")
        try:
            tools.append(parse_tool(item, "client"))
        except InputError as exc:
            raise Invalid(f"tools[{i}]: {exc}") from None
    choice = req.tool_choice
    if isinstance(choice, NamedChoice):
        return tools, choice.function.name  # the agent checks that it was sent
    return tools, choice or "auto"


def turn(req: CompletionRequest, settings: Settings) -> Turn:
    """The agent's turn for this request: its messages, sampling and tools, Heron's tools
    held to ``openai_tool_safety``, and hints that name the request's fields
    (``surface="api"``)."""
    refused_fields(req)
    grounded_fields(req)
    count_messages(req, settings)
    talk = conversation(req.messages)
    tools, choice = client_tools(req)
    options = sampling(req)
    messages = (Message("system", talk.instructions), *talk.history, Message("user", talk.message))
    measure(ChatRequest(messages, tuple(tools), sampling=options), settings)
    wants_json = json_schema(options.response_format) is not None
    if req.answer == "extractive" and (wants_json or (tools and choice != "none")):
        # The agent would quote the passages and ignore them; say so instead.
        what = "response_format" if wants_json else "tools"
        raise Invalid(
            f"{what}: an extractive answer is quoted from the passages, with no model "
            f"call, so it cannot honour {what}; leave out answer: extractive."
        )
    return Turn(
        talk.message,
        instructions=talk.instructions,
        # A server-side session keeps its own history unless the client sends one.
        history=talk.history if talk.history or req.session_id is None else None,
        session_id=req.session_id,
        library=req.library,
        model=req.model,
        answer=req.answer,
        sampling=options,
        client_tools=tools,
        tool_choice=choice,
        user=req.user or "",
        tool_safety=settings.server.openai_tool_safety,
        delegate=False,  # the delegation permission is the agent door's (heron.tools.ceiling)
        local_tools=False,  # python_exec is never a /v1 client's to run
        surface="api",
    )


def count_messages(req: CompletionRequest, settings: Settings) -> None:
    limit = settings.server.openai_max_messages
    if len(req.messages) > limit:
        raise Invalid(
            f"messages: {len(req.messages):,} messages, over the {limit:,} "
            "a request may send (HERON_OPENAI_MAX_MESSAGES); send the recent ones.",
            "messages",
        )


def measure(request: ChatRequest, settings: Settings) -> None:
    """Refuse a request that costs more than it may, before any work: its estimated
    input tokens (``openai_max_input_tokens``) and its JSON schemas
    (``heron.core.schema_bounds``, one check for all of them), the field named. Grounded
    and raw requests alike."""
    tokens = estimate_tokens(request)
    if tokens > settings.server.openai_max_input_tokens:
        raise Invalid(
            f"messages: about {tokens:,} tokens with the tools, over the "
            f"{settings.server.openai_max_input_tokens:,} a request may send "
            "(HERON_OPENAI_MAX_INPUT_TOKENS); send less history.",
            "messages",
        )
    check = SchemaCheck(
        SchemaBounds(
            max_repeat=settings.server.openai_schema_max_repeat,
            max_size=settings.server.openai_schema_max_size,
        )
    )
    wanted = json_schema(request.sampling.response_format)
    if wanted:
        check.check(wanted, "response_format.json_schema.schema")
    for i, tool in enumerate(request.tools):
        check.check(tool.parameters, f"tools[{i}].function.parameters")


def door_tokens(asked: Turn, settings: Settings) -> int:
    """What a grounded request holds of its key before any work: its messages and tools
    (``estimate_tokens``, on the long side) and its answer's bound (``max_tokens``, else
    Heron's ``agent_max_tokens``). The model calls add what they send besides when they
    are sent (``heron.llm.metering``)."""
    messages = (
        Message("system", asked.instructions),
        *(asked.history or ()),
        Message("user", asked.message),
    )
    prompt = estimate_tokens(ChatRequest(messages, tuple(asked.client_tools)))
    return prompt + (asked.sampling.max_tokens or settings.agent.max_tokens)


def _calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The client's tool calls, in OpenAI's shape (arguments as JSON text)."""
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in calls
    ]


def _finish(answer: Answer) -> str:
    """OpenAI's ``finish_reason`` (the agent's already is one; Heron's own reason is
    ``finish_detail``, an extra field)."""
    return "tool_calls" if answer.tool_calls else answer.finish_reason


def _extras(data: dict[str, Any]) -> dict[str, Any]:
    """Heron's fields beside ``choices``: the same in a completion and a stream's last
    chunk."""
    keys = ("citations", "related", "grounding", "session_id", "mode", "finish_detail")
    return {key: data[key] for key in keys}


def completion(answer: Answer, used: dict[str, int], cid: str, created: int) -> dict[str, Any]:
    data = answer.to_dict()
    message: dict[str, Any] = {"role": "assistant", "content": data["answer"]}
    if answer.tool_calls:
        message |= {"content": data["answer"] or None, "tool_calls": _calls(answer.tool_calls)}
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": data["model"],
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish(answer), "logprobs": None}
        ],
        "usage": used,
        **_extras(data),
    }


@dataclass
class _Chunks:
    """``chat.completion.chunk`` events of one answer (``data:`` only, as OpenAI sends)."""

    cid: str
    created: int
    model: str

    def __call__(self, delta: dict[str, Any] | None, **extra: Any) -> ServerSentEvent:
        finish = extra.pop("finish_reason", None)
        choices = (
            []
            if delta is None
            else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        )
        body = {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": extra.pop("model", self.model),
            "choices": choices,
            **extra,
        }
        return message(body)


async def _stream(
    rt: Runtime,
    events: Iterator[AgentEvent],
    chunk: _Chunks,
    sent: Sequence[str | None],
    include_usage: bool,
) -> AsyncIterator[ServerSentEvent]:
    """The agent's events as OpenAI chunks: text deltas, the client's tool calls as
    ``tool_calls`` deltas (each whole, ``index`` from 0), then the finishing chunk.
    Usage rides on exactly one chunk (clients that add usage up across chunks count it
    once): with ``include_usage``, OpenAI's extra last chunk with no choices; without,
    the finishing chunk. ``citations`` ride on the last one."""
    from heron.agent.answer import ClientToolCalls, Final, Token

    start = time.perf_counter()
    yield chunk({"role": "assistant", "content": ""})
    try:
        async for event in in_thread(events):
            if isinstance(event, Token):
                yield chunk({"content": event.text})
            elif isinstance(event, ClientToolCalls):
                for index, call in enumerate(_calls(event.calls)):
                    yield chunk({"tool_calls": [{"index": index, **call}]})
            elif isinstance(event, Final):
                data = event.answer.to_dict()
                rt.metrics.observe_answer(event.answer, time.perf_counter() - start)
                used = await run_in_threadpool(spend_answer, rt, event.answer, sent)
                tail = {"model": data["model"], "usage": used, **_extras(data)}
                finish = _finish(event.answer)
                if include_usage:
                    yield chunk({}, finish_reason=finish, model=data["model"])
                    yield chunk(None, **tail)
                else:
                    yield chunk({}, finish_reason=finish, **tail)
    except HeronError as exc:  # mid-stream: OpenAI sends the error as a data line
        body = error_body(str(exc), "server_error", type(exc).__name__)
        yield message(body)
    yield message("[DONE]")


def raw_messages(messages: list[ChatMessage]) -> list[Message]:
    """The messages as they are, for the model alone: system and developer messages stay
    system messages where they stand; a tool result must answer an earlier call."""
    out: list[Message] = []
    names: dict[str, str] = {}  # tool call id -> tool name, to label the results
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        text = _text(m.content, where)
        if m.role in INSTRUCTION_ROLES:
            out.append(Message("system", text))
        elif m.role == "user":
            out.append(Message("user", text))
        elif m.role == "assistant":
            calls = tuple(
                _call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(m.tool_calls or ())
            )
            names |= {c.id: c.name for c in calls}
            out.append(Message("assistant", text, calls))
        elif m.role == "tool":
            if m.tool_call_id not in names:
                raise Invalid(
                    f"{where}: tool_call_id {m.tool_call_id!r} answers no tool call of an "
                    "earlier assistant message; send the assistant message with its "
                    "tool_calls before the tool results."
                )
            out.append(
                Message("tool", text, tool_call_id=m.tool_call_id, name=names[m.tool_call_id])
            )
        else:
            raise Invalid(
                f"{where}.role: {m.role!r} is not a role Heron takes; use system, "
                "developer, user, assistant or tool (function results are tool messages)."
            )
    return out


def raw_request(req: CompletionRequest, settings: Settings) -> ChatRequest:
    """The broker's request for a ``raw/`` model: messages, tools, sampling and the
    passed fields, as the client sent them, measured as a grounded one is. Heron's own
    grounding fields are refused: a raw model searches nothing and keeps no session."""
    refused_fields(req)
    count_messages(req, settings)
    for name in ("library", "session_id", "answer"):
        if getattr(req, name) is not None:
            raise Invalid(
                f"{name}: {req.model} is the model alone, with no library search or "
                f"session; call {req.model.removeprefix(RAW_PREFIX)} for a grounded answer, "
                f"or leave {name} out."
            )
    tools, choice = client_tools(req)
    asked = ChatRequest(
        tuple(raw_messages(req.messages)),
        tuple(tools),
        choice,
        sampling=sampling(req),
        extra=passed_fields(req),
    )
    measure(asked, settings)
    return asked


#: ``finish_reason`` values OpenAI has; a provider's other reason is ``stop``.
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")


def _raw_finish(done: Completion) -> str:
    if done.tool_calls:
        return "tool_calls"
    return done.finish_reason if done.finish_reason in FINISH_REASONS else "stop"


def _raw_usage(done: Completion) -> dict[str, int]:
    used = done.usage
    total = used.prompt_tokens + used.completion_tokens
    return {
        "prompt_tokens": used.prompt_tokens,
        "completion_tokens": used.completion_tokens,
        "total_tokens": total,
    }


def raw_completion(done: Completion, cid: str, created: int) -> dict[str, Any]:
    """OpenAI's ``chat.completion`` of the model's own answer; ``model`` is the alias
    that answered (a fallback's, when one did), as ``raw/ALIAS``."""
    message: dict[str, Any] = {"role": "assistant", "content": done.text}
    if done.tool_calls:
        message |= {"content": done.text or None, "tool_calls": _calls(done.tool_calls)}
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": RAW_PREFIX + done.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _raw_finish(done), "logprobs": None}
        ],
        "usage": _raw_usage(done),
    }


async def _raw_stream(
    events: Iterator[StreamEvent],
    chunk: _Chunks,
    include_usage: bool,
) -> AsyncIterator[ServerSentEvent]:
    """The provider's stream as OpenAI chunks, each piece as it arrives; the tool calls
    (which the broker assembles) and the finish reason on the last chunks, the usage on
    exactly one (OpenAI's extra last chunk with ``include_usage``, else the finishing one)."""

    def chunks(event: StreamEvent) -> list[ServerSentEvent]:
        if isinstance(event, TextDelta):
            return [chunk({"content": event.text})]
        done = event.completion
        model = RAW_PREFIX + done.model
        out = [
            chunk({"tool_calls": [{"index": index, **call}]}, model=model)
            for index, call in enumerate(_calls(done.tool_calls))
        ]
        finish = _raw_finish(done)
        if include_usage:
            out.append(chunk({}, finish_reason=finish, model=model))
            out.append(chunk(None, model=model, usage=_raw_usage(done)))
        else:
            out.append(chunk({}, finish_reason=finish, model=model, usage=_raw_usage(done)))
        return out

    yield chunk({"role": "assistant", "content": ""})
    try:
        async for event in in_thread(events):
            for sse in chunks(event):
                yield sse
    except HeronError as exc:  # mid-stream: OpenAI sends the error as a data line
        yield message(error_body(str(exc), "server_error", type(exc).__name__))
    yield message("[DONE]")


def _prepended(first: T | None, events: Iterator[T]) -> Iterator[T]:
    if first is not None:
        yield first
    yield from events  # closing this closes ``events``, and with it the model's stream


async def started(events: Iterator[T]) -> Iterator[T]:
    """``events`` once the first has come: a failure before it (a 429 upstream, every
    model cooling down) raises here, to be answered with its status, not as a stream."""
    first = await run_in_threadpool(next, events, None)
    return _prepended(first, events)


async def raw_completions(rt: Runtime, req: CompletionRequest) -> Response:
    """``raw/ALIAS``: the broker alone. A failure before the first piece (an unknown
    alias, every model refusing, an upstream 429) is answered with its status and
    ``Retry-After``; a stream's first piece is awaited before the response starts."""
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    alias = req.model.removeprefix(RAW_PREFIX) or None
    try:
        asked = raw_request(req, rt.settings)
        broker = await run_in_threadpool(lambda: rt.agent.broker)
        if req.stream:
            events = await started(broker.stream(asked, model=alias))
            include_usage = bool(req.stream_options and req.stream_options.include_usage)
            return event_stream(
                _raw_stream(events, _Chunks(cid, created, req.model), include_usage),
                rt.settings,
                answer=True,
            )
        done = await run_in_threadpool(lambda: broker.complete(asked, model=alias))
    except (Invalid, SchemaTooLarge) as exc:
        return invalid(str(exc), exc.param)
    except InputError as exc:
        return invalid(str(exc))
    except OverLimit as exc:  # the key cannot hold what the call may spend: never sent
        return over_limit(PATH, exc)
    except HeronError as exc:
        return heron_error(exc)
    return StrictJSONResponse(raw_completion(done, cid, created))


async def chat_completions(rt: Runtime, request: Request) -> Response:
    rt = runtime_of(rt, request)  # the agent of the request's context: its libraries
    req = await read_body(request, CompletionRequest)
    if isinstance(req, Response):
        return req
    wanted = (req.model_extra or {}).get("cache")
    if wanted is not None:  # LiteLLM's per-request cache control, beside Cache-Control
        try:
            CACHE_CONTROL.set(CACHE_CONTROL.get().with_body(wanted))
        except InputError as exc:
            return invalid(str(exc), "cache")
    if req.model.startswith(RAW_PREFIX):
        return await raw_completions(rt, req)
    try:
        asked = turn(req, rt.settings)
    except (Invalid, SchemaTooLarge) as exc:
        return invalid(str(exc), exc.param)
    except InputError as exc:
        return invalid(str(exc))
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    sent = [asked.message, asked.instructions, *(m.content for m in asked.history or ())]
    start = time.perf_counter()
    try:
        # Held before any work: the client's text and the answer's bound. Each model call
        # then holds the most it can spend (the passages Heron adds included) when sent.
        reserve(door_tokens(asked, rt.settings))
        if req.stream:
            # Bad input (an unknown model, a missing library) raises here, before any
            # chunk, so it is answered with a status code.
            events = await started(await run_in_threadpool(lambda: rt.agent.stream(asked)))
            include_usage = bool(req.stream_options and req.stream_options.include_usage)
            return event_stream(
                _stream(rt, events, _Chunks(cid, created, req.model), sent, include_usage),
                rt.settings,
                answer=True,
            )
        answer = await unless_gone(request, lambda: rt.agent.ask(asked))
        used = await run_in_threadpool(spend_answer, rt, answer, sent)
    except Gone:
        return gone()
    except OverLimit as exc:
        return over_limit(PATH, exc)
    except HeronError as exc:
        return heron_error(exc)
    rt.metrics.observe_answer(answer, time.perf_counter() - start)
    return StrictJSONResponse(completion(answer, used, cid, created))


def _model(alias: str, provider: str) -> dict[str, Any]:
    return {"id": alias, "object": "model", "created": 0, "owned_by": f"heron:{provider}"}


async def models(rt: Runtime, request: Request) -> Response:
    """``GET /v1/models`` (every alias the caller may call) and ``GET /v1/models/{model}``
    (one): a key's or context's model rules (``heron.llm.budgets``) leave the others out,
    as they would refuse them."""
    try:  # the last good table (heron.server.features.reload), not the file as it is now
        table = await run_in_threadpool(lambda: rt.models)
    except HeronError as exc:
        return heron_error(exc)
    wanted = request.path_params.get("model")
    payer = payer_of(runtime_of(rt, request).settings, current_key())
    allowed = {
        alias: spec
        for alias, spec in table.models.items()
        if all(patterns_allow(spec, patterns) for _, patterns in payer.rules)
    }
    # Each chat alias twice: grounded by Heron, and the model alone (raw/ALIAS); a speech
    # model once (/v1/audio/*).
    listed = {
        prefix + alias: spec.provider
        for prefix in ("", RAW_PREFIX)
        for alias, spec in allowed.items()
        if not prefix or spec.mode == "chat"
    }
    if wanted is None:
        data = [_model(name, provider) for name, provider in listed.items()]
        return StrictJSONResponse({"object": "list", "data": data})
    if wanted not in listed:
        known = ", ".join(listed)
        return openai_error(404, f"No model {wanted!r}. Models: {known}.", "invalid_request_error")
    return StrictJSONResponse(_model(wanted, listed[wanted]))


def routes(rt: Runtime) -> list[BaseRoute]:
    """``POST /v1/chat/completions`` and ``GET /v1/models[/{model}]``."""

    return [
        Route("/v1/chat/completions", endpoint(chat_completions, rt), methods=["POST"]),
        Route("/v1/models", endpoint(models, rt), methods=["GET"]),
        Route("/v1/models/{model:path}", endpoint(models, rt), methods=["GET"]),
    ]


rpc = NO_METHODS
lifespan = no_lifespan
