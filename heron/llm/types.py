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
    """One model behind one API: ``OpenAIProvider`` (any OpenAI-compatible server),
    ``AnthropicProvider``, ``LocalProvider`` (a GGUF model run by llama.cpp in-process).
    The ``Broker`` builds one per alias of models.yml and is the only caller; it alone
    retries and falls back, so a provider makes exactly one attempt per call.

    Example usage::

        provider = OpenAIProvider(spec, key=os.environ["OPENAI_API_KEY"])
        request = ChatRequest((Message("user", "Say hi"),))
        print(provider.complete(request, timeout=30).text)   # Hi!
        provider.close()

    **Arguments.** ``request`` speaks in original tool names (see the module doc); the
    broker has already fitted it to the model (``heron.llm.payload.fit``: tool limit,
    context window). ``timeout`` is in seconds: how long to wait for the server to
    connect and between two pieces of the answer (httpx's timeout), not for the whole
    answer; a local model cannot be interrupted and is bounded by ``max_tokens``
    instead.

    **Errors.** Only ``heron.llm.errors.ProviderError`` subclasses, each naming the alias
    and the fix: ``RateLimited`` (429, with ``retry_after``), ``ProviderDown`` (5xx, an
    answer that is not the API's shape), ``ProviderTimeout`` (no answer in time, or the
    server unreachable), ``AuthError`` (key refused or missing), ``BadRequest`` (any other
    refusal of this request; a request over a local model's context). The API key
    never appears in a message. ``retryable`` on the class tells the broker what to
    try again.

    **Concurrency.** A provider may be called from several threads at once (HTTP
    providers share one connection pool; a local model runs one request at a time and
    queues the others).

    **Lifetime.** ``close()`` releases the provider's HTTP connections and is idempotent;
    no call may follow it. A local model is shared by every provider of the same GGUF
    file and freed when the process exits, so ``LocalProvider.close()`` has nothing to
    release.
    """

    def complete(self, request: ChatRequest, *, timeout: float) -> Completion:
        """The whole answer: text, or the tool calls (``Completion.tool_calls``, names
        decoded, arguments parsed; an unusable call carries ``ToolCall.error``), with the
        usage the server reported and ``model`` set to the alias."""
        ...

    def stream(self, request: ChatRequest, *, timeout: float) -> Iterator[StreamEvent]:
        """The answer as it comes: zero or more ``TextDelta`` and then exactly one
        ``Done`` holding the whole ``Completion`` (tool calls assembled), last. An error
        may come before the first event or between two; no event follows an error."""
        ...

    def close(self) -> None:
        """Release the provider's connections; a second call does nothing."""
        ...
