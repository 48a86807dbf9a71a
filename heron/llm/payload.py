"""Making a request fit one model before anything is sent: its tool limit, its name rules,
its context window; and reading the model's tool calls back.

The broker calls ``fit`` per model of the chain; providers build their wire payload with
``ToolNames`` so every name they send is valid for the model's profile, and every name the
model calls comes back as the original.
"""

from __future__ import annotations

import json
import logging
from dataclasses import fields, replace
from typing import Any

from heron.core.chat import ChatRequest, Message, Sampling, ToolCall
from heron.core.errors import UnknownTool
from heron.core.names import NameCodec
from heron.core.tools import Tool
from heron.llm.config import ModelSpec
from heron.llm.errors import BadRequest, ContextTooLong, RequestError

log = logging.getLogger("heron.llm")

#: Characters per token for the pre-flight length check: English averages about 4 with
#: BPE tokenizers; 3 makes the estimate err on the long side for code and other scripts.
CHARS_PER_TOKEN = 3
#: Tokens kept for the answer when the request sets no max_tokens.
ANSWER_RESERVE = 256
#: ``response_format`` types, OpenAI's: free text, any JSON object, JSON of a schema.
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
#: Stop sequences a request may set (OpenAI's limit).
MAX_STOP = 4


def check(request: ChatRequest) -> None:
    """Refuse what no model could take, before any call."""
    if not request.messages:
        raise RequestError(
            "The request has no messages; pass at least one Message(role='user', content=...)."
        )
    for message in request.messages:
        if not isinstance(message, Message):
            raise RequestError(
                f"Messages must be heron.llm.Message objects, got {type(message).__name__}."
            )
    check_sampling(sampling_of(request))
    names = [t.name for t in request.tools]
    if len(set(names)) != len(names):
        raise RequestError("Two tools of the request share a name; offer each tool once.")
    forced = forced_tool(request)
    if forced and forced not in names:
        raise RequestError(
            f"tool_choice names {forced!r}, which is not among the request's tools; "
            "offer it in tools, or use 'auto' or 'required'."
        )


def sampling_of(request: ChatRequest, spec: ModelSpec | None = None) -> Sampling:
    """The sampling a provider sends: ``request.sampling``, with the request's plain
    ``max_tokens`` and ``temperature`` where ``sampling`` leaves them unset, then the
    alias's own ``temperature`` from models.yml (``spec``) where the request sets none.

    >>> s = sampling_of(ChatRequest((), max_tokens=64, sampling=Sampling(temperature=0.1)))
    >>> s.max_tokens, s.temperature
    (64, 0.1)
    """
    s = request.sampling
    temperature = request.temperature if s.temperature is None else s.temperature
    if temperature is None and spec is not None:
        temperature = spec.temperature
    return replace(
        s,
        max_tokens=request.max_tokens if s.max_tokens is None else s.max_tokens,
        temperature=temperature,
    )


def sampling_fields(sampling: Sampling) -> dict[str, Any]:
    """The fields a request sets (not ``None``, not empty), by OpenAI's name: what goes
    on the wire (``defaults`` says how, and is not one)."""
    values = {f.name: getattr(sampling, f.name) for f in fields(sampling) if f.name != "defaults"}
    return {k: v for k, v in values.items() if v is not None and v != ()}


def check_sampling(s: Sampling) -> None:
    """Refuse values no provider takes (OpenAI's ranges, which are the widest), naming
    the field."""
    if s.max_tokens is not None and s.max_tokens <= 0:
        raise RequestError(f"max_tokens must be positive, got {s.max_tokens}.")
    for name, low, high in (
        ("temperature", 0.0, 2.0),
        ("top_p", 0.0, 1.0),
        ("presence_penalty", -2.0, 2.0),
        ("frequency_penalty", -2.0, 2.0),
    ):
        value = getattr(s, name)
        if value is not None and not low <= value <= high:
            raise RequestError(f"{name} must be between {low:g} and {high:g}, got {value}.")
    if len(s.stop) > MAX_STOP or not all(isinstance(x, str) and x for x in s.stop):
        raise RequestError(
            f"stop takes at most {MAX_STOP} non-empty strings, got {list(s.stop)!r:.200}."
        )
    if s.response_format is not None:
        json_schema(s.response_format)


def json_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """What ``response_format`` holds the answer to: ``None`` for free text, ``{}`` for
    any JSON object (``json_object``), the schema for ``json_schema``. Raises
    ``RequestError`` for a format that is not OpenAI's.

    >>> json_schema({"type": "json_schema", "json_schema": {"name": "n", "schema": {}}})
    {}
    >>> json_schema({"type": "text"}) is None
    True
    """
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if response_format is None or kind == "text":
        return None
    if kind == "json_object":
        return {}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if isinstance(schema, dict):
            return schema
        raise RequestError(
            "response_format json_schema needs {'json_schema': {'name': ..., 'schema': "
            f"{{...}}}}, got {response_format!r:.200}."
        )
    raise RequestError(
        f"response_format type must be one of {', '.join(RESPONSE_FORMATS)}, got {kind!r}."
    )


def refuse_unsupported(alias: str, sampling: Sampling, unsupported: dict[str, str]) -> None:
    """``BadRequest`` naming the first field of ``sampling`` the provider cannot honour;
    ``unsupported`` maps each such field to why (said in the error). A field Heron set
    itself (``Sampling.defaults``) is not refused: the provider leaves it out."""
    for name in sampling_fields(sampling):
        if name in unsupported and name not in sampling.defaults:
            raise BadRequest(
                alias,
                f"cannot honour {name!r}: {unsupported[name]}. Leave {name} out of the "
                "request, or route it to a model that takes it (heron models list).",
            )


#: OpenAI request fields a ``ChatRequest`` carries in ``extra``, sent on as they are to an
#: OpenAI-compatible provider.
PASSED_FIELDS = (
    "audio",
    "metadata",
    "modalities",
    "parallel_tool_calls",
    "prediction",
    "prompt_cache_key",
    "reasoning_effort",
    "safety_identifier",
    "service_tier",
    "store",
    "user",
    "verbosity",
    "web_search_options",
)
#: Values that ask a provider for nothing it lacks: one without the field honours them
#: by leaving it out (text only, nothing stored, the default tier, calls in parallel).
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "modalities": (["text"],),
    "store": (False,),
    "service_tier": ("auto", "default"),
    "parallel_tool_calls": (True,),
}


def extra_fields(alias: str, request: ChatRequest, takes: set[str] | frozenset[str]) -> dict:
    """The fields of ``request.extra`` a provider sends: those it ``takes``; a neutral
    value (``NEUTRAL``) of another is left out; anything else is a ``BadRequest`` naming
    the field (the broker tries the next model). ``parallel_tool_calls`` without tools
    asks for nothing, and is left out too (OpenAI refuses it there)."""
    sent: dict[str, Any] = {}
    for name, value in request.extra.items():
        if name == "parallel_tool_calls" and not request.tools:
            continue
        if name in takes:
            sent[name] = value
        elif value not in NEUTRAL.get(name, ()):
            raise BadRequest(
                alias,
                f"cannot honour {name}={value!r:.80}: the model's API has no such field. "
                f"Leave {name} out, or route the request to an OpenAI-compatible model "
                "(heron models list).",
            )
    return sent


def forced_tool(request: ChatRequest) -> str | None:
    """The tool ``tool_choice`` names, if it names one."""
    return None if request.tool_choice in ("auto", "none", "required") else request.tool_choice


def estimate_tokens(request: ChatRequest) -> int:
    """An upper-side estimate of the prompt's tokens (text and tool schemas): the
    characters of ``message_chars`` and ``tool_chars`` added up, ``/ CHARS_PER_TOKEN``."""
    chars = sum(map(message_chars, request.messages)) + sum(map(tool_chars, request.tools))
    return tokens_of(chars)


def tokens_of(chars: int) -> int:
    """``estimate_tokens`` of a prompt of ``chars`` characters."""
    return chars // CHARS_PER_TOKEN + 1


def message_chars(message: Message) -> int:
    """What one message adds to ``estimate_tokens``, in characters: its text, its tool
    calls, 16 for its framing. Additive, so a caller dropping messages one by one
    subtracts instead of estimating again."""
    calls = sum(len(json.dumps(c.arguments)) + len(c.name) for c in message.tool_calls)
    return len(message.content) + 16 + calls


def tool_chars(tool: Tool) -> int:
    """What one tool adds to ``estimate_tokens``, in characters."""
    return len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))


def fit(request: ChatRequest, spec: ModelSpec) -> ChatRequest:
    """``request`` as ``spec``'s model can take it: at most ``max_tools`` tools (the first,
    as callers rank them; a forced tool is always kept), none for a model without tool
    calling. Raises ``BadRequest`` (the broker falls back) when the model cannot serve
    it: a forced tool without tool calling, or (``ContextTooLong``) a prompt over its
    context window."""
    caps = spec.capabilities
    tools = request.tools
    if tools and not caps.tool_calling:
        if request.tool_choice not in ("auto", "none"):
            raise BadRequest(
                spec.alias,
                "cannot call tools, and the request requires a tool call; route "
                "it to a model with tool_calling: true.",
            )
        log.warning(
            "model %r cannot call tools; sending the request without its %d tools",
            spec.alias,
            len(tools),
        )
        request = replace(request, tools=(), tool_choice="auto")
    elif caps.max_tools is not None and len(tools) > caps.max_tools:
        kept = list(tools[: caps.max_tools])
        forced = forced_tool(request)
        if forced and forced not in {t.name for t in kept}:
            kept[-1] = next(t for t in tools if t.name == forced)
        log.warning(
            "model %r takes at most %d tools; sending the first %d of %d",
            spec.alias,
            caps.max_tools,
            caps.max_tools,
            len(tools),
        )
        request = replace(request, tools=tuple(kept))
    needed = estimate_tokens(request) + (sampling_of(request).max_tokens or ANSWER_RESERVE)
    if needed > caps.context_window:
        raise ContextTooLong(
            spec.alias,
            f"the request needs about {needed} tokens, over the model's context "
            f"window of {caps.context_window}; shorten the messages, or route to a model "
            "with a larger context_window.",
        )
    return request


class ToolNames:
    """The request's tool names (offered ones and those in earlier calls) encoded for a
    profile; ``call`` turns a model's call into a ``ToolCall`` with the original name."""

    def __init__(self, request: ChatRequest, profile: str) -> None:
        history = {c.name for m in request.messages for c in m.tool_calls}
        history |= {m.name for m in request.messages if m.name}
        self.codec = NameCodec({t.name for t in request.tools} | history, profile)

    def encode(self, name: str) -> str:
        return self.codec.encode(name)

    def tool(self, tool: Tool) -> tuple[str, str, dict[str, Any]]:
        """``(encoded name, description, JSON schema)``."""
        return self.codec.encode(tool.name), tool.description, tool.parameters

    def call(self, call_id: str, name: str, arguments: str | dict[str, Any] | None) -> ToolCall:
        """A model's call: the name decoded, string arguments parsed; a problem with either
        goes to ``ToolCall.error`` (the caller answers the model with it) rather than
        failing the whole completion."""
        error = None
        try:
            original = self.codec.decode(name)
        except UnknownTool as exc:
            original, error = name, str(exc)
        parsed, problem = parse_arguments(arguments)
        return ToolCall(call_id, original, parsed, error or problem)


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """``(arguments, problem)``: OpenAI sends a JSON string, Anthropic an object."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"The arguments are not valid JSON ({exc}): {raw[:200]!r}. Send a JSON object."
    if not isinstance(value, dict):
        return {}, f"The arguments must be a JSON object, got {raw[:200]!r}."
    return value, None
