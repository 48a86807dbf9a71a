"""The shapes every model conversation has, whatever the provider: plain values.

Kept below the capabilities (``heron.llm`` speaks them to providers; the jobs and the
agent build requests with them); ``heron.llm`` re-exports them. Tool names here are
always the *original* names (``hero_osis.contact.list``); a provider encodes them for its
wire format with ``heron.core.names.NameCodec`` and decodes the model's calls back before
they leave the provider, so nothing above ``heron.llm`` sees an encoded name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from heron.core.tools import Tool

__all__ = [
    "ChatRequest",
    "Completion",
    "Done",
    "Message",
    "Role",
    "Sampling",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolChoice",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """``error``: why the call cannot be run as it is (arguments that are not a JSON
    object, a name that was not offered); answer it with a tool message saying so."""

    id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # role "tool": the call this answers
    name: str | None = None  # role "tool": the tool's original name


#: ``"auto"``, ``"none"``, ``"required"`` (some tool), or the original name of one tool.
ToolChoice = str


@dataclass(frozen=True)
class Sampling:
    """How a model samples its answer, as a client asked (OpenAI's names and meanings);
    ``None``/empty: the provider's default. ``response_format`` is OpenAI's
    (``{"type": "json_object"}`` or ``{"type": "json_schema", "json_schema": {...}}``).
    A provider that cannot honour a field raises ``BadRequest`` naming it, except for the
    fields named in ``defaults``: those Heron set on its own, not the caller (the agent's
    repeat penalties), which such a provider leaves out instead, so that a fallback to
    it still answers. ``heron.llm.payload.sampling_fields`` gives the fields set."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_format: dict[str, Any] | None = None
    defaults: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ChatRequest:
    """``max_tokens`` and ``temperature`` are kept beside ``sampling`` for the callers
    that set only those; where both are set, ``sampling`` wins
    (``heron.llm.payload.sampling_of``)."""

    messages: tuple[Message, ...]
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    sampling: Sampling = field(default_factory=Sampling)
    #: OpenAI request fields Heron has no value of its own for (``reasoning_effort``,
    #: ``service_tier``, ``metadata``...), by OpenAI's name: an OpenAI-compatible provider
    #: sends them on, another honours or refuses each (``heron.llm.payload.PASSED_FIELDS``).
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""  # the alias from models.yml that answered
    finish_reason: str = "stop"
    seconds: float = 0.0


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, as it streams."""

    text: str


@dataclass(frozen=True)
class Done:
    """The end of a stream: the whole completion, tool calls assembled."""

    completion: Completion


StreamEvent = TextDelta | Done
