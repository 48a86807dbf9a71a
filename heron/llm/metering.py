"""``Tab``: what a model call may spend, reserved before it is sent and settled after.

The broker knows models, not who pays for them. Whoever does (the server: a request's
API key, ``heron.server.features.keys``) puts a ``Tab`` in ``TAB`` for the work it pays for; every
model call made under it, whichever door it came in by, then

1. reserves the most it can spend before anything is sent (``reserve``): the prompt's
   estimate (``heron.llm.payload.estimate_tokens``, on the long side) and the answer's
   bound (``answer_bound``). A tab that cannot reserve that much raises its own refusal
   (a ``HeronError``: the key's 429), and the model is never called;
2. is charged what it spent when it ends, however it ends (``spent``): the provider's
   usage, or where the provider reported none (a stream the client left, a provider that
   counts no prompt) the text sent and received counted with the model's tokenizer
   (``heron.llm.broker.count_tokens``).

Without a tab (the CLI, a job, a loopback server without keys) nothing is reserved or
charged.

>>> token = TAB.set(tab)                  # doctest: +SKIP
>>> broker.complete(request)              # reserved, called, charged
>>> TAB.reset(token)
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import replace
from typing import Protocol

from heron.core.chat import ChatRequest
from heron.keys import Key
from heron.llm.config import ModelSpec
from heron.llm.payload import ANSWER_RESERVE, estimate_tokens, sampling_of


class Tab(Protocol):
    """The tokens one piece of work may spend (one request, one JSON-RPC call), and
    ``key``: whose they are (the models it may call, its budget in money:
    ``heron.llm.budgets``)."""

    key: Key

    def need(self, tokens: int, *, least: int | None = None) -> int | None:
        """Hold at least ``tokens`` unspent tokens for this work, or, when ``least`` is
        given and that much is not there, as many as there are down to ``least``.
        Returns the tokens held unspent after it (``None``: no limit to hold against).
        Raises the payer's refusal (a ``HeronError``) when not even ``least`` (default
        ``tokens``) can be held; then nothing is held."""
        ...

    def spent(self, tokens_in: int, tokens_out: int) -> None:
        """Charge what a model call spent, out of what was held."""
        ...


#: The tab the model calls of this context are charged to (``None``: no one's).
TAB: ContextVar[Tab | None] = ContextVar("heron_tab", default=None)


def current() -> Tab | None:
    return TAB.get()


def answer_bound(request: ChatRequest, spec: ModelSpec) -> int | None:
    """The most tokens ``spec``'s model may write for ``request``: its ``max_tokens``, else
    the alias's ``max_output_tokens``, else the provider's own default (Anthropic and the
    local model send one); ``None`` for an OpenAI-compatible server told nothing, which
    writes until the context window is full."""
    asked = sampling_of(request).max_tokens or spec.max_output_tokens
    if asked:
        return asked
    if spec.provider == "anthropic":
        from heron.llm.anthropic import DEFAULT_MAX_TOKENS

        return DEFAULT_MAX_TOKENS
    if spec.provider == "local":
        from heron.llm.local import DEFAULT_MAX_TOKENS as LOCAL_MAX_TOKENS

        return LOCAL_MAX_TOKENS
    return None


def reserve(tab: Tab, request: ChatRequest, spec: ModelSpec) -> ChatRequest:
    """Hold on ``tab`` the most ``request`` can spend on ``spec``'s model, and return the
    request to send. One with no bound on its answer is given one: what the tab could
    hold, up to the context window, becomes its ``max_tokens``, so that it cannot spend
    more than was reserved. Raises the tab's refusal."""
    prompt = estimate_tokens(request)
    bound = answer_bound(request, spec)
    if bound is not None:
        tab.need(prompt + bound)
        return request
    most = max(spec.capabilities.context_window, prompt + 1)
    held = tab.need(most, least=min(most, prompt + ANSWER_RESERVE))
    if held is None or held >= most:
        return request
    bounded = replace(request.sampling, max_tokens=max(1, held - prompt))
    return replace(request, sampling=bounded)
