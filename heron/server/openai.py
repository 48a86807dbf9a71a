"""OpenAI's Chat Completions API in front of the agent: any OpenAI client gets grounded,
cited answers. ``POST /v1/chat/completions`` (plain or ``stream: true``) and
``GET /v1/models`` (the aliases of models.yml); ``/v1/embeddings`` is
``heron.server.embeddings``.

What a request says reaches the agent as one ``heron.agent.turn.Turn`` (``turn``):

- ``messages``: system (and ``developer``) messages become the agent's ``instructions``;
  the last user message is the question the libraries are searched for; the turns
  before it are the ``history`` (no ``session_id`` needed). Content may be a string or
  a list of text parts; other parts (images, audio, files) are refused.
- sampling (``max_completion_tokens`` or ``max_tokens``, ``temperature``, ``top_p``,
  ``stop``, ``seed``, ``presence_penalty``, ``frequency_penalty``, ``response_format``)
  goes to the model as ``heron.llm.Sampling``; a provider that cannot honour one refuses
  it, and that is a 400 naming it. ``n`` above 1, ``logprobs``, ``logit_bias`` and the
  legacy ``functions`` are refused (400) rather than silently dropped.
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
extractive answer), ``max_steps`` (the tool loop's guard), or a provider's reason OpenAI
has no word for; else ``null``. Unknown fields are ignored,
as OpenAI's API does.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.agent.turn import Turn
from heron.core.chat import Message, Sampling, ToolCall
from heron.core.tools import Tool, parse_tool
from heron.errors import HeronError, InputError
from heron.llm.broker import count_tokens
from heron.llm.payload import check_sampling, json_schema, parse_arguments
from heron.server.events import event_stream, in_thread, message
from heron.server.hooks import endpoint, no_lifespan, no_methods
from heron.server.replies import error_body, heron_error, invalid, openai_error, read_body
from heron.server.runtime import Runtime
from heron.server.strictjson import StrictJSONResponse
from heron.settings import Settings

if TYPE_CHECKING:  # the agent is opened on the first chat, and imported then too
    from heron.agent.answer import AgentEvent, Answer

#: Roles whose messages are the agent's instructions (``developer`` is OpenAI's newer
#: name for ``system``).
INSTRUCTION_ROLES = ("system", "developer")


class Invalid(InputError):
    """A request Heron cannot honour as sent; the message names the field."""


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
    names: dict[str, str] = {}  # tool call id -> tool name, to label the results
    question: int | None = None  # index in turns of the last user message with text
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        text = _text(m.content, where)
        if m.role in INSTRUCTION_ROLES:
            if text.strip():
                instructions.append(text)
        elif m.role == "user":
            turns.append(Message("user", text))
            if text.strip():
                question = len(turns) - 1
        elif m.role == "assistant":
            calls = tuple(
                _call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(m.tool_calls or ())
            )
            names |= {c.id: c.name for c in calls}
            turns.append(Message("assistant", text, calls))
        elif m.role == "tool":
            if m.tool_call_id not in names:
                raise Invalid(
                    f"{where}: tool_call_id {m.tool_call_id!r} answers no tool call of an "
                    "earlier assistant message; send the assistant message with its "
                    "tool_calls before the tool results."
                )
            turns.append(
                Message("tool", text, tool_call_id=m.tool_call_id, name=names[m.tool_call_id])
            )
        else:
            raise Invalid(
                f"{where}.role: {m.role!r} is not a role Heron takes; use system, "
                "developer, user, assistant or tool (function results are tool messages)."
            )
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
    talk = conversation(req.messages)
    tools, choice = client_tools(req)
    options = sampling(req)
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
        tool_safety=settings.openai_tool_safety,
        surface="api",
    )


def usage(rt: Runtime, answer: Answer, sent: Sequence[str]) -> dict[str, int]:
    """OpenAI's usage of ``answer``: what the model's provider reported for the turn's
    calls. An answer no model call wrote (extractive, no lead) has none to report; it
    gets the client's messages (``sent``) as prompt tokens and the answer as completion
    tokens, counted with the model's tokenizer (``heron.llm.broker.count_tokens``), so
    usage is never 0 and compares with a generated answer's. Runs in a worker thread
    (the first count may read the GGUF's vocabulary)."""
    prompt, written = answer.usage.prompt_tokens, answer.usage.completion_tokens
    if not (prompt or written):
        spec = rt.agent.broker.table.spec(answer.model)
        prompt, written = count_tokens(spec, sent), count_tokens(spec, [answer.answer])
    return {"prompt_tokens": prompt, "completion_tokens": written, "total_tokens": prompt + written}


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
    sent: Sequence[str],
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
                tail = {
                    "model": data["model"],
                    "usage": await run_in_threadpool(usage, rt, event.answer, sent),
                    **_extras(data),
                }
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


async def chat_completions(rt: Runtime, request: Request) -> Response:
    req = await read_body(request, CompletionRequest)
    if isinstance(req, Response):
        return req
    try:
        asked = turn(req, rt.settings)
    except InputError as exc:
        return invalid(str(exc))
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    sent = [asked.message, asked.instructions, *(m.content for m in asked.history or ())]
    start = time.perf_counter()
    try:
        if req.stream:
            # Bad input (an unknown model, a missing library) raises here, before any
            # chunk, so it is answered with a status code.
            events = await run_in_threadpool(lambda: rt.agent.stream(asked))
            include_usage = bool(req.stream_options and req.stream_options.include_usage)
            return event_stream(
                _stream(rt, events, _Chunks(cid, created, req.model), sent, include_usage),
                rt.settings,
            )
        answer = await run_in_threadpool(lambda: rt.agent.ask(asked))
        used = await run_in_threadpool(usage, rt, answer, sent)
    except HeronError as exc:
        return heron_error(exc)
    rt.metrics.observe_answer(answer, time.perf_counter() - start)
    return StrictJSONResponse(completion(answer, used, cid, created))


def _model(alias: str, provider: str) -> dict[str, Any]:
    return {"id": alias, "object": "model", "created": 0, "owned_by": f"heron:{provider}"}


async def models(rt: Runtime, request: Request) -> Response:
    """``GET /v1/models`` (every alias) and ``GET /v1/models/{model}`` (one)."""
    try:  # the last good table (heron.server.reload), not the file as it is now
        table = await run_in_threadpool(lambda: rt.models)
    except HeronError as exc:
        return heron_error(exc)
    wanted = request.path_params.get("model")
    if wanted is None:
        data = [_model(alias, spec.provider) for alias, spec in table.models.items()]
        return StrictJSONResponse({"object": "list", "data": data})
    if wanted not in table.models:
        known = ", ".join(table.models)
        return openai_error(404, f"No model {wanted!r}. Models: {known}.", "invalid_request_error")
    return StrictJSONResponse(_model(wanted, table.models[wanted].provider))


def routes(rt: Runtime) -> list[BaseRoute]:
    """``POST /v1/chat/completions`` and ``GET /v1/models[/{model}]``."""

    return [
        Route("/v1/chat/completions", endpoint(chat_completions, rt), methods=["POST"]),
        Route("/v1/models", endpoint(models, rt), methods=["GET"]),
        Route("/v1/models/{model:path}", endpoint(models, rt), methods=["GET"]),
    ]


register = no_methods
lifespan = no_lifespan
