"""Making a request fit one model before anything is sent: its tool limit, its name rules,
its context window; and reading the model's tool calls back.

The broker calls ``fit`` per model of the chain; providers build their wire payload with
``ToolNames`` so every name they send is valid for the model's profile, and every name the
model calls comes back as the original.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from heron.llm.config import ModelSpec
from heron.llm.errors import BadRequest, RequestError
from heron.llm.types import ChatRequest, Message, ToolCall
from heron.tools.errors import UnknownTool
from heron.tools.model import Tool
from heron.tools.names import NameCodec

log = logging.getLogger("heron.llm")

#: Characters per token for the pre-flight length check: English averages about 4 with
#: BPE tokenizers; 3 makes the estimate err on the long side for code and other scripts.
CHARS_PER_TOKEN = 3
#: Tokens kept for the answer when the request sets no max_tokens.
ANSWER_RESERVE = 256


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
    if request.max_tokens is not None and request.max_tokens <= 0:
        raise RequestError(f"max_tokens must be positive, got {request.max_tokens}.")
    names = [t.name for t in request.tools]
    if len(set(names)) != len(names):
        raise RequestError("Two tools of the request share a name; offer each tool once.")
    forced = forced_tool(request)
    if forced and forced not in names:
        raise RequestError(
            f"tool_choice names {forced!r}, which is not among the request's tools; "
            "offer it in tools, or use 'auto' or 'required'."
        )


def forced_tool(request: ChatRequest) -> str | None:
    """The tool ``tool_choice`` names, if it names one."""
    return None if request.tool_choice in ("auto", "none", "required") else request.tool_choice


def estimate_tokens(request: ChatRequest) -> int:
    """An upper-side estimate of the prompt's tokens (text and tool schemas)."""
    chars = sum(len(m.content) + 16 for m in request.messages)
    chars += sum(
        len(json.dumps(c.arguments)) + len(c.name) for m in request.messages for c in m.tool_calls
    )
    chars += sum(
        len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in request.tools
    )
    return chars // CHARS_PER_TOKEN + 1


def fit(request: ChatRequest, spec: ModelSpec) -> ChatRequest:
    """``request`` as ``spec``'s model can take it: at most ``max_tools`` tools (the first,
    as callers rank them; a forced tool is always kept), none for a model without tool
    calling. Raises ``BadRequest`` (the broker falls back) when the model cannot serve
    it: a forced tool without tool calling, or a prompt over its context window."""
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
    needed = estimate_tokens(request) + (request.max_tokens or ANSWER_RESERVE)
    if needed > caps.context_window:
        raise BadRequest(
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
