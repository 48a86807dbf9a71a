"""``Broker``: every model call in Heron, routed by alias, retried, falling back.

>>> broker = load_broker(Settings())                                 # doctest: +SKIP
>>> broker.complete(ChatRequest((Message("user", "Say hi"),))).text   # doctest: +SKIP
'Hi! How can I help you today?'

For each request the broker walks the alias's chain (the alias, then its ``fallbacks``;
a prompt over a model's window tries its ``context_window_fallbacks`` first). A model
that is cooling down (``heron.llm.cooldowns``: it failed repeatedly, for every request
of the process) is skipped; when every model of the chain is, the call fails at once
with ``CoolingDown`` and its ``retry_after``. Each model gets the request as it can take
it (``payload.fit``: tool limit, context window), then up to ``1 + llm_retries`` attempts:
a 5xx and a 429 wait (exponential backoff with jitter, or the server's ``retry-after``,
at most ``llm_max_wait``) and try again. A model moves on to the next at once on any
other error, on a 429 whose ``retry-after`` is longer than ``llm_max_wait`` (it is passed
on to the caller when no model answers), and once the failure cooled it down while the
chain has another model: so a hung model costs one timeout, not three. A stream is
retried or moved only until its first event has been yielded: after that the caller
has seen text, and starting over would repeat it.

A model cools only for its own failures: a timeout the request caused with its own
``max_tokens`` (``OwnTimeout``) and a refusal of the request (a 4xx) leave it open to
every other caller, and a probe after a cooldown is answered at its first token.

Whoever pays for a call puts a tab in ``heron.llm.metering.TAB``: each attempt holds on
it the most it can spend before it is sent, and is charged what it spent when it ends,
however it ends (``spent``: the provider's usage, else the tokenizer's count of what was
sent and handed on, so a stream closed mid-answer is charged for what it gave).

The file's ``router_settings`` (``RoutingTable.policy``) override the settings'
``llm_retries``, ``llm_timeout``, ``llm_allowed_fails`` and ``llm_cooldown``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heron.core.chat import ChatRequest, Completion, Done, Message, StreamEvent, TextDelta
from heron.errors import ConfigError
from heron.llm import metering, speech
from heron.llm.board import open_board
from heron.llm.budgets import (
    Hold,
    Ledger,
    OverBudget,
    Payer,
    allowed_chain,
    hold_call,
    ledger_for,
    payer_of,
)
from heron.llm.cache import CONTROL, ResponseCache, request_key
from heron.llm.config import Capabilities, ModelSpec, RoutingTable, load_table
from heron.llm.cooldowns import COOLDOWNS, Cooldowns
from heron.llm.errors import (
    AuthError,
    ContextTooLong,
    CoolingDown,
    NoModelAvailable,
    OwnTimeout,
    ProviderDown,
    ProviderError,
    ProviderTimeout,
    RateLimited,
)
from heron.llm.metering import Tab, answer_bound, reserve
from heron.llm.payload import CHARS_PER_TOKEN, check, fit, sampling_of
from heron.llm.routing import DEPLOYMENTS
from heron.llm.types import Provider
from heron.resource import Resource
from heron.settings import Settings

log = logging.getLogger("heron.llm")
#: Which key each model with several is on, for the whole process: one key's 401 or 429
#: turns every broker to the next.
_TURNS: dict[tuple[str, str], int] = {}
_TURNS_LOCK = threading.Lock()


def _provider_for(spec: ModelSpec, key: str | None, models_dir: Path) -> Provider:
    # Each backend imports its driver in its own module: llama_cpp only for "local".
    if spec.provider == "openai":
        from heron.llm.openai import OpenAIProvider

        return OpenAIProvider(spec, key)
    if spec.provider == "anthropic":
        from heron.llm.anthropic import AnthropicProvider

        return AnthropicProvider(spec, key)
    from heron.llm.local import LocalProvider

    return LocalProvider(spec, models_dir)


@dataclass(frozen=True)
class Limits:
    """The numbers one broker runs by: the table's policy over the settings'."""

    retries: int
    timeout: float
    max_wait: float
    allowed_fails: int
    cooldown: float


def cooldowns_file(home: Path) -> Path:
    """Where the brokers of a home write the cooldowns they see, for ``heron models list``
    in another process."""
    return home / "model-cooldowns.json"


def count_tokens(spec: ModelSpec, texts: Sequence[str], models_dir: Path) -> int:
    """Tokens of ``texts`` for ``spec``'s model, where no provider reported them (an
    answer no model call wrote): the local model's own tokenizer (its GGUF in
    ``models_dir`` when it is the bundled one); for a model behind an API, whose
    tokenizer Heron does not have, ``estimate_tokens``'s rule (on the long side)."""
    if spec.provider == "local":
        from heron.llm.local import count_tokens as local_tokens

        return local_tokens(spec, list(texts), models_dir)
    return sum(len(t) // CHARS_PER_TOKEN + 1 for t in texts if t)


@dataclass
class _Pass:
    """One walk of ``Broker._run`` along a chain: what it was asked, and what each model
    it skipped or tried left behind, for the error raised when none answers."""

    request: ChatRequest
    limits: Limits
    timeout: float
    streaming: bool
    tab: Tab | None
    payer: Payer
    queue: list[ModelSpec]  # the chain, with the bigger siblings of a prompt too long
    position: int = 0  # the next model of ``queue``
    fitted: dict[str, ChatRequest] = field(default_factory=dict)  # each model's request
    failures: dict[str, ProviderError] = field(default_factory=dict)
    cooling: list[ModelSpec] = field(default_factory=list)
    busy: list[CoolingDown] = field(default_factory=list)  # skipped for their rpm or tpm
    over: list[OverBudget] = field(default_factory=list)  # skipped for their own budget


@dataclass
class _Call:
    """One call to one model, as far as it got: what it is charged when it ends."""

    started: float = field(default_factory=time.monotonic)
    asked: ChatRequest | None = None
    hold: Hold | None = None
    sent_at: float | None = None  # when it was sent: its latency runs from here
    first: float | None = None  # when its answer began
    sent: list[str] = field(default_factory=list)  # the text handed on, charged if no usage
    done: Completion | None = None
    yielded: bool = False


class Broker(Resource):
    """Model calls over a ``RoutingTable``; ``load_broker(settings)`` builds one from settings."""

    def __init__(
        self,
        table: RoutingTable,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        cooldowns: Cooldowns = COOLDOWNS,
    ) -> None:
        self.table = table
        self.settings = settings
        self.cooldowns = cooldowns
        # Replicas of one PostgreSQL skip what any of them cooled (heron.llm.board).
        cooldowns.use(open_board(settings))
        self._sleep = sleep
        self._providers: dict[tuple[str, str | None], Provider] = {}
        self.deployments = DEPLOYMENTS
        self._lock = threading.Lock()
        #: Told ``(event, alias)``: ``retry``, ``fallback`` (given up on for the next
        #: model), ``cooldown`` (cooled down), ``probe`` (tried once after its cooldown).
        self.observer: Callable[[str, str], None] | None = None
        #: Told ``(key or None, context, alias, dollars)`` of each call that cost money.
        self.on_spend: Callable[[str | None, str, str, float], None] | None = None
        #: Told ``(alias, dollars)`` a cache hit did not spend (``heron.llm.cache``).
        self.on_saved: Callable[[str, float], None] | None = None
        policy = table.policy
        self.cache = (
            ResponseCache(policy.cache_ttl, policy.cache_size or 1000) if policy.cache_ttl else None
        )

    @property
    def limits(self) -> Limits:
        policy, s = self.table.policy, self.settings
        return Limits(
            retries=s.llm.retries if policy.retries is None else policy.retries,
            timeout=policy.timeout or s.llm.timeout,
            max_wait=s.llm.max_wait,
            allowed_fails=s.llm.allowed_fails
            if policy.allowed_fails is None
            else policy.allowed_fails,
            cooldown=s.llm.cooldown if policy.cooldown is None else policy.cooldown,
        )

    def health(self) -> list[dict[str, Any]]:
        """The cooldown record of each alias of the table this process has called."""
        aliases = set(self.table.models)
        return [row for row in self.cooldowns.snapshot() if row["alias"] in aliases]

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
        tab = metering.current()  # taken here: the caller's, whichever thread runs the call
        payer = payer_of(self.settings, tab.key if tab is not None else None)
        chain = self._chain(request, model, fallbacks, payer)
        control, key = CONTROL.get(), self._cache_key(request, model, payer)
        if key is not None and control.read:
            hit = self._hit(key, model)
            if hit is not None:
                return hit
        for event in self._run(request, chain, timeout, streaming=False, tab=tab, payer=payer):
            if isinstance(event, Done):
                if key is not None and control.write:
                    self._keep(key, event.completion)
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
        # The caller's tab, taken now: the generator may be run, or closed, elsewhere.
        tab = metering.current()
        payer = payer_of(self.settings, tab.key if tab is not None else None)
        chain = self._chain(request, model, fallbacks, payer)
        control, key = CONTROL.get(), self._cache_key(request, model, payer)
        if key is not None and control.read:
            hit = self._hit(key, model)
            if hit is not None:  # the whole answer as one piece
                return iter([*([TextDelta(hit.text)] if hit.text else []), Done(hit)])
        events = self._run(request, chain, timeout, streaming=True, tab=tab, payer=payer)
        return events if key is None or not control.write else self._kept(key, events)

    def _cache_key(self, request: ChatRequest, model: str | None, payer: Payer) -> str | None:
        """The response cache's key of this call, ``None`` when it may not use the cache:
        the model as asked, and who asks (their context and model rules)."""
        if self.cache is None or not payer.cache:
            return None
        # Model rules by their patterns alone: two keys that may call the same share.
        scope = [payer.context, sorted(sorted(patterns) for _, patterns in payer.rules)]
        return request_key(scope, self.table.spec(model).alias, request)

    def _hit(self, key: str, model: str | None) -> Completion | None:
        """The kept answer of ``key``, counted; ``None`` (a miss, counted) when none."""
        assert self.cache is not None
        hit = self.cache.get(key)
        if hit is None:
            self._tell("cache_miss", self.table.spec(model).alias)
            return None
        self._tell("cache_hit", hit.model)
        spec = self.table.models.get(hit.model)
        if spec is not None and hit.usage is not None and self.on_saved is not None:
            self.on_saved(
                hit.model, spec.price.cost(hit.usage.prompt_tokens, hit.usage.completion_tokens)
            )
        return replace(hit, seconds=0.0)

    def _keep(self, key: str, completion: Completion) -> None:
        if self.cache is not None and not any(c.error for c in completion.tool_calls):
            self.cache.put(key, completion)

    def _kept(self, key: str, events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
        """``events``, the answer kept once whole (a stream left early is not)."""
        for event in events:
            if isinstance(event, Done):
                self._keep(key, event.completion)
            yield event

    def check(self, model: str | None = None) -> dict[str, Any]:
        """One tiny call to ``model`` alone, no fallback: ``{"model", "ok", "seconds",
        "answer" or "error"}``."""
        request = ChatRequest((Message("user", "Reply with one word: ready"),), max_tokens=8)
        alias = self.table.spec(model).alias
        started = time.monotonic()
        try:
            # A check calls the model even while it cools down: it is the probe asked for.
            chain = self._deployed([self.table.spec(alias)])
            events = self._run(request, chain, None, streaming=False, force=True)
            done = next(e.completion for e in events if isinstance(e, Done))
        except ProviderError as exc:
            seconds = round(time.monotonic() - started, 3)
            return {"model": alias, "ok": False, "seconds": seconds, "error": str(exc)}
        return {"model": alias, "ok": True, "seconds": done.seconds, "answer": done.text}

    def _chain(
        self, request: ChatRequest, model: str | None, fallbacks: bool, payer: Payer
    ) -> list[ModelSpec]:
        """The models to try, as far as ``payer`` may call them (``ModelNotAllowed`` for
        the one asked for)."""
        check(request)
        chain = self.table.chain(model) if fallbacks else [self.table.spec(model)]
        if chain[0].mode != "chat":
            raise ConfigError(
                f"The model {chain[0].alias!r} is a speech model ({chain[0].mode}); chat with "
                f"one of: {', '.join(a for a, s in self.table.models.items() if s.mode == 'chat')}."
            )
        chain = [s for s in chain if s.mode == "chat"]
        return self._deployed(allowed_chain(payer, chain))

    def speak(
        self,
        text: str,
        *,
        model: str | None = None,
        voice: str | None = None,
        response_format: str = "wav",
        timeout: float | None = None,
    ) -> Iterator[bytes]:
        """``text`` spoken (``heron.llm.speech``): ``model``, else the table's first speech
        model, else espeak-ng; its audio in chunks. The caller's model rules apply."""
        spec = self._audio(model, speech.SPEECH)
        return speech.speak(
            spec,
            self._key_for(spec),
            text,
            voice=voice,
            response_format=response_format,
            timeout=timeout or self.limits.timeout,
        )

    def transcribe(
        self,
        audio: bytes,
        filename: str,
        content_type: str = "application/octet-stream",
        *,
        model: str | None = None,
        language: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, object]:
        """``audio`` as text: ``model``, else the table's first transcription model."""
        spec = self._audio(model, speech.TRANSCRIPTION)
        return speech.transcribe(
            spec,
            self._key_for(spec),
            audio,
            filename,
            content_type,
            language=language,
            timeout=timeout or self.limits.timeout,
        )

    def _audio(self, model: str | None, mode: str) -> ModelSpec:
        """The speech model of ``mode`` asked for, or the table's first, as the caller
        may call it."""
        found = [s for s in self.table.models.values() if s.mode == mode]
        if model is not None:
            spec = self.table.spec(model)
            if spec.mode != mode:
                raise ConfigError(
                    f"The model {spec.alias!r} is not a {mode} model; ask for one of: "
                    f"{', '.join(s.alias for s in found) or 'none configured'}."
                )
        elif found:
            spec = found[0]
        elif mode == speech.SPEECH:
            spec = replace(speech.LOCAL_SPEECH, model=self.settings.interventions.tts_program)
        else:
            raise ConfigError(
                "No transcription model: add to models.yml an alias with mode: "
                "audio_transcription and provider: openai (an OpenAI-compatible "
                "/audio/transcriptions, e.g. model: whisper-1)."
            )
        tab = metering.current()
        allowed_chain(payer_of(self.settings, tab.key if tab is not None else None), [spec])
        return spec

    def _deployed(self, chain: list[ModelSpec]) -> list[ModelSpec]:
        """``chain`` with each pool replaced by its deployments, in the order of its
        routing strategy (``heron.llm.routing``); each model once."""
        out: dict[str, ModelSpec] = {}
        for spec in chain:
            members = [self.table.spec(n) for n in spec.deployments]
            for one in self.deployments.order(self.table.strategy(spec), members) or [spec]:
                out.setdefault(one.alias, one)
        return list(out.values())

    def _run(
        self,
        request: ChatRequest,
        chain: list[ModelSpec],
        timeout: float | None,
        *,
        streaming: bool,
        force: bool = False,
        tab: Tab | None = None,
        payer: Payer | None = None,
    ) -> Iterator[StreamEvent]:
        payer = payer or payer_of(self.settings, None)
        limits = self.limits
        run = _Pass(request, limits, timeout or limits.timeout, streaming, tab, payer, list(chain))
        # The one retry loop: every model in turn, each up to 1 + retries attempts.
        # Providers never retry themselves, so waits cannot multiply.
        while run.position < len(run.queue):
            spec = run.queue[run.position]
            run.position += 1
            full = None if force else self.deployments.over_rate(spec)
            if full is not None:  # its rpm or tpm used up this minute: skipped, as cooling
                run.busy.append(self._full(spec, full))
                continue
            gate = "ok" if force else self.cooldowns.admit(spec, deadline=run.timeout)
            if gate == "cooling":
                run.cooling.append(spec)
                continue
            if gate == "probe":
                log.info("model %r: its cooldown is over; probing it with one call", spec.alias)
                self._tell("probe", spec.alias)
            if (yield from self._try_model(run, spec, probe=gate == "probe")):
                return
        raise self._unanswered(run, chain)

    def _try_model(
        self, run: _Pass, spec: ModelSpec, *, probe: bool
    ) -> Generator[StreamEvent, None, bool]:
        """``spec`` called up to 1 + retries times (a probe once), its events yielded: True
        once it answered, False when ``run`` goes on to its next model."""
        tries = 1 if probe else run.limits.retries + 1
        reported = False  # the probe's verdict is in (else it is released)
        keys_tried = 1  # a 401 or 429 of one key moves to the next, not to a retry
        attempt = 0
        try:
            while attempt < tries:
                call = _Call()
                try:
                    yield from self._call(run, spec, call, probe=probe)
                    return True
                except ProviderError as exc:
                    if (
                        not call.yielded
                        and keys_tried < self._key_count(spec)
                        and isinstance(exc, AuthError | RateLimited)
                    ):
                        keys_tried += 1  # that key's refusal, not the model's failure
                        self._next_key(spec)
                        log.warning("%s; trying its next key", exc)
                        continue
                    if call.asked is not None and not run.streaming:
                        exc = self._own_timeout(exc, call.asked, spec, run.timeout)
                    cooled = self._failed(spec, exc, run.limits)
                    reported = reported or cooled or _health_failure(exc)
                    if call.yielded:
                        raise exc
                    if not self._again(run, spec, exc, cooled, attempt, tries):
                        break
                    attempt += 1
                finally:
                    # A probe is answered by the first token of its answer.
                    reported = reported or call.first is not None
                    self._charge(run, spec, call)
        except OverBudget as exc:
            if exc.limit_of != f"model:{spec.alias}":
                raise  # the caller's own budget: no other model changes that
            log.warning("%s; trying the next model", exc)
            run.over.append(exc)
        finally:
            if probe and not reported:
                self.cooldowns.release(spec)
        return False

    def _call(
        self, run: _Pass, spec: ModelSpec, call: _Call, *, probe: bool
    ) -> Iterator[StreamEvent]:
        """One call to ``spec``, its events yielded as they come; ``call`` records how far
        it got, for its charge."""
        if spec.alias not in run.fitted:  # once per model: its warnings once
            run.fitted[spec.alias] = fit(run.request, spec)
        call.asked = run.fitted[spec.alias]
        if run.tab is not None:  # the most it can spend, held before it is sent
            call.asked = reserve(run.tab, call.asked, spec)
        # Its most in money too, on the payers' budgets and the model's.
        call.asked, call.hold = hold_call(
            self.ledger, run.payer, call.asked, spec, answer_bound(call.asked, spec)
        )
        provider = self._provider(spec)
        call.sent_at = time.monotonic()
        self.deployments.started(spec)
        events = (
            provider.stream(call.asked, timeout=run.timeout)
            if run.streaming
            else iter([Done(provider.complete(call.asked, timeout=run.timeout))])
        )
        for event in events:
            if call.first is None:
                call.first = time.monotonic()
                if probe:
                    # The first token answers the probe: a stream read slowly, or a
                    # long one, must not keep the model cooling for others.
                    self._answered(spec)
            if isinstance(event, Done):
                seconds = round(time.monotonic() - call.started, 4)
                event = Done(replace(event.completion, model=spec.alias, seconds=seconds))
                call.done = event.completion
                self._answered(spec)
            else:
                call.sent.append(event.text)
            call.yielded = True
            yield event

    def _again(
        self,
        run: _Pass,
        spec: ModelSpec,
        exc: ProviderError,
        cooled: bool,
        attempt: int,
        tries: int,
    ) -> bool:
        """After ``spec`` failed with ``exc``: True once the wait before trying it again
        is over, False with the failure noted when ``run`` moves to its next model."""
        if isinstance(exc, ContextTooLong):  # its bigger siblings next
            later = [n for n in spec.context_fallbacks if n not in run.failures]
            ahead = [s.alias for s in run.queue[run.position :]]
            run.queue[run.position : run.position] = [
                self.table.spec(n) for n in later if n not in ahead
            ]
        others = any(s.alias not in run.failures for s in run.queue[run.position :])
        long_wait = (
            isinstance(exc, RateLimited)
            and exc.retry_after is not None
            and exc.retry_after > run.limits.max_wait
        )
        if not exc.retryable or attempt + 1 == tries or long_wait or (cooled and others):
            run.failures[spec.alias] = exc
            if others:  # the last failure is raised, not logged twice
                log.warning("%s; trying the next model", exc)
                self._tell("fallback", spec.alias)
            return False
        wait = self._wait(exc, attempt)
        log.warning("%s; retry %d/%d in %.1f s", exc, attempt + 1, tries - 1, wait)
        self._tell("retry", spec.alias)
        self._sleep(wait)
        return True

    def _charge(self, run: _Pass, spec: ModelSpec, call: _Call) -> None:
        """Charge ``call`` whatever ended it: an answer, a failure, a client that left
        mid-stream (the generator closed at a yield)."""
        used = (
            spent(spec, call.asked, call.sent, call.done, self.settings.models_dir)
            if call.asked is not None
            else (0, 0)
        )
        if call.sent_at is not None:
            latency = None if call.first is None else call.first - call.sent_at
            self.deployments.ended(spec, latency, sum(used))
        if run.tab is not None and call.asked is not None:
            run.tab.spent(*used)
        if call.hold is not None:
            self._paid(call.hold, spec, used)

    def _unanswered(self, run: _Pass, chain: list[ModelSpec]) -> Exception:
        """What a ``run`` no model answered raises: a model's own budget where that alone
        stopped it, else its one failure, else ``NoModelAvailable`` with them all."""
        if run.over and not run.failures and not run.cooling and not run.busy:
            return run.over[0]
        errors = [*run.failures.values(), *(self._cooling(s) for s in run.cooling), *run.busy]
        return errors[0] if len(errors) == 1 else NoModelAvailable(chain[0].alias, errors)

    @property
    def ledger(self) -> Ledger:
        return ledger_for(self.settings)

    def _paid(self, hold: Hold, spec: ModelSpec, used: tuple[int, int]) -> None:
        """Settle a call's hold with what it cost, and tell ``on_spend``."""
        dollars = spec.price.cost(*used)
        self.ledger.settle(hold, spec.alias, dollars)
        if dollars > 0 and self.on_spend is not None:
            self.on_spend(hold.payer.key, hold.payer.context, spec.alias, dollars)

    def _answered(self, spec: ModelSpec) -> None:
        if self.cooldowns.succeeded(spec):
            log.info("model %r answers again", spec.alias)
            self._save()

    def _own_timeout(
        self, exc: ProviderError, asked: ChatRequest, spec: ModelSpec, timeout: float
    ) -> ProviderError:
        """``exc`` as an ``OwnTimeout`` when the request caused it: a whole answer of more
        tokens than Heron's own calls ask a model for (the alias's ``max_output_tokens``,
        else ``agent_max_tokens``) that the provider was still writing at the timeout. A
        stream's timeout is between two pieces: a stall, the model's."""
        if not isinstance(exc, ProviderTimeout) or not exc.waiting:
            return exc
        wanted = sampling_of(asked).max_tokens
        ordinary = spec.max_output_tokens or self.settings.agent.max_tokens
        if wanted is None or wanted <= ordinary:
            return exc
        return OwnTimeout(
            spec.alias,
            f"no answer within {timeout:g} s to a request for up to {wanted} tokens "
            f"(max_tokens), more than the {ordinary} of an ordinary answer: the wait was "
            "this request's own, so the model was not cooled down for anyone else. Ask "
            "for fewer tokens, stream the answer (stream: true), or raise HERON_LLM_TIMEOUT.",
        )

    def _failed(self, spec: ModelSpec, exc: ProviderError, limits: Limits) -> bool:
        """Count ``exc`` against ``spec``'s health; True if it cooled the model down."""
        if not _health_failure(exc):
            return False
        long_wait = isinstance(exc, RateLimited) and (exc.retry_after or 0) > limits.max_wait
        cooled = self.cooldowns.failed(
            spec,
            type(exc).__name__,
            allowed_fails=limits.allowed_fails,
            cooldown=limits.cooldown,
            at_once=isinstance(exc, ProviderTimeout) or long_wait,
            seconds=exc.retry_after if isinstance(exc, RateLimited) else None,
            rate_limited=isinstance(exc, RateLimited),
        )
        if cooled:
            left, _ = self.cooldowns.remaining(spec)
            log.warning("model %r cools down for %.0f s after: %s", spec.alias, left, exc)
            self._tell("cooldown", spec.alias)
            self._save()
        return cooled

    def _full(self, spec: ModelSpec, seconds: float) -> CoolingDown:
        limits = ", ".join(
            f"{value} {name}" for name, value in (("rpm", spec.rpm), ("tpm", spec.tpm)) if value
        )
        return CoolingDown(
            spec.alias,
            f"used its {limits} this minute; tried again in {seconds:.0f} s. Wait, or add "
            "a deployment to its pool in models.yml.",
            retry_after=max(1.0, seconds),
            rate_limited=True,
        )

    def _cooling(self, spec: ModelSpec) -> CoolingDown:
        left, rate_limited = self.cooldowns.remaining(spec)
        return CoolingDown(
            spec.alias,
            f"cooling down after {'a 429 (rate limited)' if rate_limited else 'failures'}; "
            f"tried again in {left:.0f} s. Wait, "
            "or add a fallback in models.yml (heron models list shows the cooldowns).",
            retry_after=left,
            rate_limited=rate_limited,
        )

    def _tell(self, event: str, alias: str) -> None:
        if self.observer:
            self.observer(event, alias)

    def _save(self) -> None:
        """Write the cooldowns for ``heron models list``; a home that cannot be written
        only loses that view."""
        path = cooldowns_file(self.settings.home)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps({"pid": os.getpid(), "models": self.health()}))
            os.replace(tmp, path)
        except OSError as exc:
            log.debug("cannot write %s: %s", path, exc)

    def _wait(self, exc: ProviderError, attempt: int) -> float:
        cap = self.settings.llm.max_wait
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return min(exc.retry_after, cap)
        return min(self.settings.llm.backoff * 2**attempt * random.uniform(0.5, 1.5), cap)

    def _keys(self, spec: ModelSpec) -> list[str]:
        """The keys of ``spec``'s variables, in order (a variable may hold several,
        comma-separated, as ``OPENROUTER_API_KEYS``)."""
        found = []
        for name in spec.key_envs:
            found += [k.strip() for k in os.environ.get(name, "").split(",") if k.strip()]
        return list(dict.fromkeys(found))

    def _key_count(self, spec: ModelSpec) -> int:
        return len(self._keys(spec))

    def _next_key(self, spec: ModelSpec) -> None:
        """Turn ``spec`` to its next key, for every broker of the process."""
        with _TURNS_LOCK:
            _TURNS[(spec.alias, spec.base_url or "")] = (
                _TURNS.get((spec.alias, spec.base_url or ""), 0) + 1
            )

    def _provider(self, spec: ModelSpec) -> Provider:
        key = self._key_for(spec)
        with self._lock:
            cached = (spec.alias, key)
            if cached not in self._providers:
                self._providers[cached] = _provider_for(spec, key, self.settings.models_dir)
            return self._providers[cached]

    def _key_for(self, spec: ModelSpec) -> str | None:
        """The key ``spec``'s calls send now (the process's turn among its keys)."""
        key = None
        if spec.key_envs:
            keys = self._keys(spec)
            if not keys:
                raise AuthError(
                    spec.alias,
                    f"${' and $'.join(spec.key_envs)} {'is' if len(spec.key_envs) == 1 else 'are'} "
                    f"not set. Export the {spec.provider} API key in it, or pick another model "
                    "(heron models list).",
                )
            with _TURNS_LOCK:
                turn = _TURNS.get((spec.alias, spec.base_url or ""), 0)
            key = keys[turn % len(keys)]
        return key

    def close(self) -> None:
        with self._lock:
            for provider in self._providers.values():
                close = getattr(provider, "close", None)
                if close:
                    close()
            self._providers.clear()


def _health_failure(exc: ProviderError) -> bool:
    """A failure that says the model is unwell (not that the request was wrong, nor that
    it asked for more than fits in the timeout)."""
    if isinstance(exc, OwnTimeout):
        return False
    return isinstance(exc, ProviderTimeout | ProviderDown | RateLimited)


def spent(
    spec: ModelSpec,
    asked: ChatRequest,
    sent: Sequence[str],
    done: Completion | None,
    models_dir: Path,
) -> tuple[int, int]:
    """``(tokens in, tokens out)`` one call spent: the provider's usage; where it reported
    none (a stream closed before its end, a provider that counts no prompt) the prompt and
    what was handed on, counted with ``count_tokens``. A call that handed nothing on
    (refused, failed, cut before its first piece) spent nothing."""
    if done is None and not sent:
        return 0, 0
    usage = done.usage if done is not None else None
    tokens_in = usage.prompt_tokens if usage else 0
    tokens_out = usage.completion_tokens if usage else 0
    if not tokens_in:
        tokens_in = count_tokens(spec, [m.content for m in asked.messages], models_dir)
    if not tokens_out:
        written = list(sent) if done is None else [done.text]
        if done is not None:
            written += [json.dumps(c.arguments) for c in done.tool_calls]
        tokens_out = count_tokens(spec, written, models_dir)
    return tokens_in, tokens_out


def load_broker(settings: Settings) -> Broker:
    """The broker over the routing table the settings name (``local`` with no models.yml)."""
    return Broker(load_table(settings), settings)
