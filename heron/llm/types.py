"""The shapes every model conversation has, whatever the provider.

Tool names here are always the *original* names (``hero_osis.contact.list``); a provider
encodes them for its wire format with ``heron.tools.NameCodec`` and decodes the model's
calls back before they leave the provider, so nothing above ``heron.llm`` sees an
encoded name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from heron.tools.model import Tool

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
class ChatRequest:
    messages: tuple[Message, ...]
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None


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


class Provider(Protocol):
    """One model behind one API. Raises ``heron.llm.errors.ProviderError`` subclasses;
    it does not retry (the broker's one retry loop does)."""

    def complete(self, request: ChatRequest, *, timeout: float) -> Completion: ...

    def stream(self, request: ChatRequest, *, timeout: float) -> Iterator[StreamEvent]: ...
