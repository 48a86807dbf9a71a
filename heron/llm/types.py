"""The contract of one provider (``Provider``); the values it speaks (``ChatRequest``,
``Completion`` ...) live in ``heron.core.chat``, below the capabilities, as the jobs and the
agent build requests with them too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from heron.core.chat import ChatRequest, Completion, StreamEvent

__all__ = ["Provider"]


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
