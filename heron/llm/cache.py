"""A response cache: an identical request gets the answer already given, for ``ttl``
seconds, without a model call.

Off unless models.yml turns it on, in LiteLLM's words::

    litellm_settings:
      cache: true
      cache_params: {type: local, ttl: 600, max_size_in_memory: 1000}

Identical means the same model asked for (the alias or pool, as named), the same
messages, tools, tool choice, sampling fields and passed fields, byte for byte once
written as sorted JSON (an exact cache: a semantic one would answer a question with
another's answer). Never shared across contexts, nor between callers who may call
different models: each entry's key holds its context and the model rules of its key and
context (``heron.llm.budgets.Payer.rules``), and each context's broker keeps its own
cache besides.

A caller opts out per request with ``Cache-Control: no-cache`` (do not answer from the
cache) or ``no-store`` (do not keep this answer), the HTTP header ``heron.server.features.keys``
reads into ``CONTROL``, or LiteLLM's body field ``"cache": {"no-cache": true}`` on
``/v1/chat/completions``, and per key with ``heron keys create --no-cache`` (neither).
A hit costs no money and no provider call; ``heron_model_cache_hits_total``,
``heron_model_cache_misses_total`` and ``heron_cache_saved_dollars_total`` count them.

An ordered dict with expiry times is all this needs (cachetools' ``TTLCache`` would be
one more dependency for twenty lines); entries are evicted oldest first past
``max_size``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

from heron.core.chat import ChatRequest, Completion
from heron.errors import InputError

#: LiteLLM's defaults for a local cache.
DEFAULT_TTL = 600.0
DEFAULT_SIZE = 1000


@dataclass(frozen=True)
class CacheControl:
    """What one request lets the cache do: answer it (``read``), keep its answer
    (``write``)."""

    read: bool = True
    write: bool = True

    @classmethod
    def from_header(cls, value: str | None) -> CacheControl:
        """From a ``Cache-Control`` request header: ``no-cache`` and ``no-store``."""
        words = {w.strip().lower() for w in (value or "").split(",")}
        return cls(read="no-cache" not in words, write="no-store" not in words)

    def with_body(self, value: Any) -> CacheControl:
        """This control and a request body's ``cache`` field, LiteLLM's per-request form
        (``{"no-cache": true, "no-store": true}``); ``InputError`` for another shape."""
        if not isinstance(value, dict) or not all(
            k in ("no-cache", "no-store") and isinstance(v, bool) for k, v in value.items()
        ):
            raise InputError(
                'cache must be an object of booleans: {"no-cache": true} (do not answer '
                'from the cache), {"no-store": true} (do not keep the answer).'
            )
        return CacheControl(
            read=self.read and not value.get("no-cache", False),
            write=self.write and not value.get("no-store", False),
        )


#: What a request says nothing about: answer it from the cache, keep its answer.
ANY = CacheControl()
#: The cache control of the request being served (``heron.server.features.keys`` sets it).
CONTROL: ContextVar[CacheControl] = ContextVar("heron_cache_control", default=ANY)


def request_key(scope: Any, model: str, request: ChatRequest) -> str:
    """The exact key of ``request`` to ``model`` for callers of ``scope``."""
    document = {"scope": scope, "model": model, "request": asdict(request)}
    text = json.dumps(document, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """Answers by ``request_key``, each for ``ttl`` seconds; thread-safe."""

    def __init__(
        self, ttl: float, max_size: int = DEFAULT_SIZE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.max_size = max_size
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, Completion]] = OrderedDict()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            expires, completion = found
            if expires <= self._clock():
                del self._entries[key]
                return None
            return completion

    def put(self, key: str, completion: Completion) -> None:
        with self._lock:
            self._entries[key] = (self._clock() + self.ttl, completion)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
