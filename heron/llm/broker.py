"""``Broker``: every model call in Heron, routed by alias, retried, falling back.

>>> broker = load_broker(Settings())                                 # doctest: +SKIP
>>> broker.complete(ChatRequest((Message("user", "Say hi"),))).text   # doctest: +SKIP
'Hi! How can I help you today?'

For each request the broker walks the alias's chain (the alias, then its ``fallbacks``).
Each model gets the request as it can take it (``payload.fit``: tool limit, context
window), then up to ``1 + llm_retries`` attempts: 429, 5xx and timeouts wait (exponential
backoff with jitter, or the server's ``retry-after``, both capped at ``llm_max_wait``)
and try again; any other error moves on to the next model at once. A stream is retried
or moved only until its first event has been yielded: after that the caller has seen
text, and starting over would repeat it.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from heron.core.chat import ChatRequest, Completion, Done, Message, StreamEvent
from heron.llm.config import Capabilities, ModelSpec, RoutingTable, load_table
from heron.llm.errors import AuthError, NoModelAvailable, ProviderError, RateLimited
from heron.llm.payload import CHARS_PER_TOKEN, check, fit
from heron.llm.types import Provider
from heron.resource import Resource
from heron.settings import Settings

log = logging.getLogger("heron.llm")


def _provider_for(spec: ModelSpec, key: str | None) -> Provider:
    # Each backend imports its driver in its own module: llama_cpp only for "local".
    if spec.provider == "openai":
        from heron.llm.openai import OpenAIProvider

        return OpenAIProvider(spec, key)
    if spec.provider == "anthropic":
        from heron.llm.anthropic import AnthropicProvider

        return AnthropicProvider(spec, key)
    from heron.llm.local import LocalProvider

    return LocalProvider(spec)


def count_tokens(spec: ModelSpec, texts: Sequence[str]) -> int:
    """Tokens of ``texts`` for ``spec``'s model, where no provider reported them (an
    answer no model call wrote): the local model's own tokenizer; for a model behind an
    API, whose tokenizer Heron does not have, ``estimate_tokens``'s rule (on the long
    side)."""
    if spec.provider == "local":
        from heron.llm.local import count_tokens as local_tokens

        return local_tokens(spec, list(texts))
    return sum(len(t) // CHARS_PER_TOKEN + 1 for t in texts if t)


class Broker(Resource):
    """Model calls over a ``RoutingTable``; ``load_broker(settings)`` builds one from settings."""

    def __init__(
        self,
        table: RoutingTable,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.table = table
        self.settings = settings
        self._sleep = sleep
        self._providers: dict[str, Provider] = {}
        self._lock = threading.Lock()
        #: Told ``("retry" | "fallback", alias)`` when a model is retried or given up on.
        self.observer: Callable[[str, str], None] | None = None

    def capabilities(self, model: str | None = None) -> Capabilities:
        """What ``model`` (default: the default alias) accepts."""
        return self.table.spec(model).capabilities

    def models(self) -> list[ModelSpec]:
        return list(self.table.models.values())

    def complete(
        self,
        request: ChatRequest,
        *,
        model: str | None = None,
        timeout: float | None = None,
        fallbacks: bool = True,
    ) -> Completion:
        """The whole answer of the first model of the chain that gives one.

        ``fallbacks=False`` tries ``model`` alone (its retries still apply)."""
        chain = self._chain(request, model, fallbacks)
        for event in self._run(request, chain, timeout, streaming=False):
            if isinstance(event, Done):
                return event.completion
        raise AssertionError("a completed call always ends with Done")  # pragma: no cover

    def stream(
        self,
        request: ChatRequest,
        *,
        model: str | None = None,
        timeout: float | None = None,
        fallbacks: bool = True,
    ) -> Iterator[StreamEvent]:
        """``TextDelta`` pieces as they arrive, then one ``Done`` with the whole completion.

        A bad request or an unknown alias raises here, before the first ``next()``."""
        chain = self._chain(request, model, fallbacks)
        return self._run(request, chain, timeout, streaming=True)

    def check(self, model: str | None = None) -> dict[str, Any]:
        """One tiny call to ``model`` alone, no fallback: ``{"model", "ok", "seconds",
        "answer" or "error"}``."""
        request = ChatRequest((Message("user", "Reply with one word: ready"),), max_tokens=8)
        alias = self.table.spec(model).alias
        started = time.monotonic()
        try:
            done = self.complete(request, model=alias, fallbacks=False)
        except ProviderError as exc:
            seconds = round(time.monotonic() - started, 3)
            return {"model": alias, "ok": False, "seconds": seconds, "error": str(exc)}
        return {"model": alias, "ok": True, "seconds": done.seconds, "answer": done.text}

    def _chain(self, request: ChatRequest, model: str | None, fallbacks: bool) -> list[ModelSpec]:
        check(request)
        return self.table.chain(model) if fallbacks else [self.table.spec(model)]

    def _run(
        self,
        request: ChatRequest,
        chain: list[ModelSpec],
        timeout: float | None,
        *,
        streaming: bool,
    ) -> Iterator[StreamEvent]:
        timeout = timeout or self.settings.llm_timeout
        tries = self.settings.llm_retries + 1
        failures: dict[str, ProviderError] = {}
        fitted: dict[str, ChatRequest] = {}
        # The one retry loop: every (model, attempt) pair in order. Providers never retry
        # themselves, so waits cannot multiply.
        for spec, attempt in [(s, a) for s in chain for a in range(tries)]:
            if spec.alias in failures:
                continue
            started, yielded = time.monotonic(), False
            try:
                if spec.alias not in fitted:  # once per model: its warnings once
                    fitted[spec.alias] = fit(request, spec)
                provider = self._provider(spec)
                events = (
                    provider.stream(fitted[spec.alias], timeout=timeout)
                    if streaming
                    else iter([Done(provider.complete(fitted[spec.alias], timeout=timeout))])
                )
                for event in events:
                    if isinstance(event, Done):
                        seconds = round(time.monotonic() - started, 4)
                        event = Done(replace(event.completion, model=spec.alias, seconds=seconds))
                    yielded = True
                    yield event
                return
            except ProviderError as exc:
                if yielded:
                    raise
                last = attempt + 1 == tries
                if not exc.retryable or last:
                    failures[spec.alias] = exc
                    if spec is not chain[-1]:  # the last failure is raised, not logged twice
                        log.warning("%s; trying the next model", exc)
                        if self.observer:
                            self.observer("fallback", spec.alias)
                    continue
                wait = self._wait(exc, attempt)
                log.warning("%s; retry %d/%d in %.1f s", exc, attempt + 1, tries - 1, wait)
                if self.observer:
                    self.observer("retry", spec.alias)
                self._sleep(wait)
        errors = list(failures.values())
        raise errors[0] if len(errors) == 1 else NoModelAvailable(chain[0].alias, errors)

    def _wait(self, exc: ProviderError, attempt: int) -> float:
        cap = self.settings.llm_max_wait
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return min(exc.retry_after, cap)
        return min(self.settings.llm_backoff * 2**attempt * random.uniform(0.5, 1.5), cap)

    def _provider(self, spec: ModelSpec) -> Provider:
        with self._lock:
            if spec.alias not in self._providers:
                key = None
                if spec.api_key_env:
                    key = os.environ.get(spec.api_key_env)
                    if not key:
                        raise AuthError(
                            spec.alias,
                            f"${spec.api_key_env} is not set. Export the "
                            f"{spec.provider} API key in it, or pick another model "
                            "(heron models list).",
                        )
                self._providers[spec.alias] = _provider_for(spec, key)
            return self._providers[spec.alias]

    def close(self) -> None:
        with self._lock:
            for provider in self._providers.values():
                close = getattr(provider, "close", None)
                if close:
                    close()
            self._providers.clear()


def load_broker(settings: Settings) -> Broker:
    """The broker over the routing table the settings name (``local`` with no models.yml)."""
    return Broker(load_table(settings), settings)
