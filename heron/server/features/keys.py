"""Who calls, what they may do, and how much: named API keys on every request.

``KeyMiddleware`` (right inside ``TokenMiddleware``) finds the request's key:

- a bearer token starting ``hk_`` is a named key (``heron.keys``): unknown or revoked,
  401; else that key, with its scopes, context and limits;
- else, on a server with ``HERON_API_TOKEN``, the request passed ``TokenMiddleware`` with
  that token (or the page's sign-in): ``API_TOKEN``, an admin key named
  ``HERON_API_TOKEN``;
- else (a loopback server without a token, where every caller may do everything) no key.

The key is ``request.state.key`` (``scope["state"]["key"]``, a ``heron.keys.Key``, or
``None``), for code that reads its ``name``, ``scopes`` or bound ``context``. Then:

- **Scopes.** Each route needs one (``ROUTES``; an unlisted route needs ``admin``); each
  JSON-RPC method its own (``Method.scope``), checked per call by ``rpc_gate``; each MCP
  tool its own (``heron.server.doors.mcp``). Without it: 403 naming the scope (OpenAI's error
  shape; JSON-RPC ``FORBIDDEN`` -32010; an MCP tool error).
- **Limits.** ``rpm``: requests per window (``HERON_KEYS_WINDOW``, 60 s), a JSON-RPC
  call counting as one (a batch of ten is ten); ``tpm``: model tokens (in and out) per
  window; ``monthly_tokens``: per calendar month (UTC). Over one: 429 with
  ``Retry-After`` (JSON-RPC ``RATE_LIMITED`` -32029, ``retry_after`` in ``data``).
- **Tokens are reserved before they are spent** (the token reservation rule,
  docs/security.md). Each request with a key has a ``Tab``, ``heron.llm.metering``'s
  ``TAB`` for the work it pays for (each call of a JSON-RPC batch its own, opened by
  ``rpc_gate`` before the call runs; an MCP tool call its own, ``acting_as``). What a
  request may spend is held on the key at once, under one lock, against what the window
  and the month have left after what is spent and what every request under way holds:
  the door holds what it can tell before the work (the client's text and the answer's
  bound), and every model call, whichever door it came by, holds the most it can spend
  before it is sent (``heron.llm.broker``). A request that cannot hold what it needs is
  refused (429, ``OverLimit`` naming the limit and when it resets) and holds nothing;
  one that can is charged what it spent as it spends it (the provider's usage, or the
  tokenizer's count of what was sent: a stream the client left is charged for what
  reached it), and what it held unspent goes back when it ends. Windows and holds are
  counted in memory on one machine, and in the database when ``HERON_DATABASE_URL`` is
  PostgreSQL, so that replicas share each key's limits (``heron.server.http.windows``); the
  month's tokens are in the key store, which servers on one PostgreSQL share as of each
  one's last write (``HERON_KEYS_FLUSH``).
- **Revocation.** A revoked key opens nothing from its next request on, and its open
  event streams (``/chat/stream``, jobs', interventions', ``/v1`` streams) end at once
  with an event saying so: at once for ``keys.revoke`` on this server, within
  ``REVOKED_POLL`` seconds for a key revoked elsewhere (the CLI, another server).
- **Usage.** Requests and tokens per key: ``heron_key_requests_total{key,outcome}``
  and ``heron_key_tokens_total{key,direction}`` in ``/metrics`` (one label value per
  key), and the key store's ``key_usage``, written every ``HERON_KEYS_FLUSH`` seconds
  and at shutdown, which ``heron keys usage`` and ``keys.usage`` read.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heron.agent import Answer
from heron.errors import NotFound
from heron.keys import (
    ADMIN,
    PREFIX,
    SCOPES,
    Forbidden,
    Key,
    KeyStore,
    KeyUsage,
    OverLimit,
    month_of,
    open_keys,
    seconds_to_next_month,
)
from heron.llm.broker import count_tokens
from heron.llm.cache import CONTROL as CACHE_CONTROL
from heron.llm.cache import CacheControl
from heron.llm.metering import TAB
from heron.server.doors.rpc import Method, Methods, Params, RpcError
from heron.server.features.metrics import Metrics
from heron.server.hooks import no_routes
from heron.server.http.auth import is_open
from heron.server.http.middleware import OPEN_PATHS
from heron.server.http.replies import error_body, for_path, retry_after
from heron.server.http.strictjson import dumps
from heron.server.http.windows import Tokens, open_windows
from heron.server.runtime import Runtime
from heron.settings import Settings

log = logging.getLogger("heron.server.features.keys")

#: The key of a request that carries ``HERON_API_TOKEN`` (or the page's sign-in with it).
API_TOKEN = Key(name="HERON_API_TOKEN", scopes=frozenset({ADMIN}))


@dataclass(frozen=True)
class Rule:
    """What a route needs: ``methods`` (``None``: any), its ``scope`` (``None``: checked
    further in, per JSON-RPC method or MCP tool) and whether it spends tokens."""

    path: re.Pattern[str]
    scope: str | None
    methods: frozenset[str] | None = None
    metered: bool = False


def _rule(path: str, scope: str | None, *methods: str, metered: bool = False) -> Rule:
    return Rule(re.compile(f"^(?:{path})$"), scope, frozenset(methods) or None, metered)


#: Each route's scope, the first match deciding; a route listed nowhere needs ``admin``.
ROUTES: tuple[Rule, ...] = (
    _rule("/rpc", None),
    _rule("/mcp/?|/mcp/[^/]+/?", None),  # each tool checked as it is listed and called
    _rule("/v1/chat/completions", "chat", metered=True),
    _rule("/chat/stream(/[^/]+)?", "chat", metered=True),
    _rule("/v1/embeddings", "read", metered=True),
    _rule("/v1/audio/speech|/v1/audio/transcriptions", "chat", "POST"),
    _rule("/v1/models(/.*)?", "read"),
    _rule("/jobs/stream|/jobs/[^/]+/events/stream", "jobs"),
    _rule("/interventions/[0-9]+/outcome", "chat", "POST"),
    _rule("/interventions/stream|/interventions/audio/[^/]+", "read", "GET", "HEAD"),
    _rule("/ready|/metrics", "read", "GET", "HEAD"),
    # The page and its panes (heron.server.web): reading; what they do goes through the above.
    _rule(
        "/|/libraries|/skills|/tools|/jobs|/interventions|/operations|/source",
        "read",
        "GET",
        "HEAD",
    ),
)
#: JSON-RPC methods that spend model tokens: checked against the token limits first.
METERED_METHODS = frozenset({"agent.chat", "agent.ask"})  # agent.ask: heron ask's


def rule_for(method: str, path: str) -> Rule | None:
    """The first of ``ROUTES`` matching the request; ``None``: it needs ``admin``."""
    for rule in ROUTES:
        if rule.path.match(path) and (rule.methods is None or method in rule.methods):
            return rule
    return None


@dataclass(frozen=True)
class Caller:
    """The request's key and the keyring that counts it (``CALLER``)."""

    key: Key
    ring: Keyring

    def tab(self) -> Tab:
        """A new tab of this key's tokens, for work its opener closes itself."""
        return Tab(self.ring, self.key)


#: The key of the request being handled, for code below the middleware that has no
#: request at hand (a JSON-RPC method, a stream's task); ``None`` without a key.
CALLER: ContextVar[Caller | None] = ContextVar("heron_caller", default=None)


def current_key() -> Key | None:
    caller = CALLER.get()
    return caller.key if caller else None


def require(scope: str) -> None:
    """Raise ``heron.keys.Forbidden`` unless the request's key holds ``scope`` (no key:
    nothing to check)."""
    caller = CALLER.get()
    if caller is not None:
        caller.key.require(scope)


def reserve(tokens: int) -> None:
    """Hold ``tokens`` of the request's key for the work about to start, before it starts
    (a door's reservation: what it can tell of the request's cost). Raises ``OverLimit``
    when the key has not that many left. No key: nothing to hold."""
    tab = current_tab()
    if tab is not None:
        tab.need(tokens)


def spend(tokens_in: int, tokens_out: int) -> None:
    """Charge the request's key with the tokens its answer spent, as the door counts
    them: what its model calls have not charged already (the broker charges each call
    as it ends), so an answer is never charged twice, and one no model wrote (extractive)
    is charged its counted text."""
    tab = current_tab()
    if isinstance(tab, Tab):
        tab.charge(tokens_in, tokens_out)
        return
    caller = CALLER.get()
    if caller is not None:
        caller.ring.spend(caller.key, tokens_in, tokens_out)


def spend_answer(rt: Runtime, answer: Answer, sent: Sequence[str | None]) -> dict[str, int]:
    """Charge the request's key for ``answer`` (``spend``) and return its usage in
    OpenAI's shape, alike at every door (``/v1``, ``/chat/stream``, ``agent.chat``, MCP's
    ask): what the model's provider reported for the turn's calls. An answer no model
    call wrote (extractive, no lead) has none to report; it is counted with the model's
    tokenizer (``heron.llm.broker.count_tokens``): the client's text (``sent``) as prompt
    tokens and the answer as completion tokens, so quoting is never free by one door and
    paid by another, and usage compares with a generated answer's. Blocking (the first
    count may read the GGUF's vocabulary): call it from a worker thread."""
    prompt, written = answer.usage.prompt_tokens, answer.usage.completion_tokens
    if not (prompt or written):
        spec = rt.agent.broker.table.spec(answer.model)
        models_dir = rt.settings.models_dir
        prompt = count_tokens(spec, [text for text in sent if text], models_dir)
        written = count_tokens(spec, [answer.answer], models_dir)
    spend(prompt, written)
    return {"prompt_tokens": prompt, "completion_tokens": written, "total_tokens": prompt + written}


def current_tab() -> Tab | None:
    tab = TAB.get()
    return tab if isinstance(tab, Tab) else None


def key_of(request: Any) -> Key | None:
    """The key a request (a Starlette ``Request``, or ``None`` over stdio) came with."""
    state = getattr(request, "scope", {}).get("state") or {}
    return state.get("key")


class Tab:
    """What one piece of work (a request, one call of a JSON-RPC batch, an MCP tool call,
    a chat stream's answer) holds and spends of its key's tokens: ``heron.llm.metering``'s
    ``Tab``. It holds, spends out of what it holds, and gives back the rest on ``close``;
    a refusal gives back all it held at once, since the work it was for will not run."""

    def __init__(self, ring: Keyring, key: Key) -> None:
        self.ring = ring
        self.key = key
        self.held = 0  # reserved on the key and not spent yet
        self.charged_in = 0  # what was charged so far, model calls and door alike
        self.charged_out = 0
        self._lock = threading.Lock()

    def need(self, tokens: int, *, least: int | None = None) -> int | None:
        with self._lock:
            if self.held >= tokens:
                return self.held
            more = tokens - self.held
            fewest = None if least is None else max(0, least - self.held)
            try:
                granted = self.ring.reserve(
                    self.key, more, least=fewest, wanted=tokens, own=self.held
                )
            except OverLimit:
                self._release()
                raise
            if granted is None:
                return None
            self.held += granted
            return self.held

    def spent(self, tokens_in: int, tokens_out: int) -> None:
        tokens_in, tokens_out = max(0, tokens_in), max(0, tokens_out)
        with self._lock:
            covered = min(self.held, tokens_in + tokens_out)
            self.held -= covered
            self.charged_in += tokens_in
            self.charged_out += tokens_out
        self.ring.settle(self.key, covered, tokens_in, tokens_out)

    def charge(self, tokens_in: int, tokens_out: int) -> None:
        """Charge a door's count of the whole answer beyond what was charged already."""
        with self._lock:
            more_in = max(0, tokens_in - self.charged_in)
            more_out = max(0, tokens_out - self.charged_out)
        if more_in or more_out:
            self.spent(more_in, more_out)

    def close(self) -> None:
        """Give back what is held and unspent; the tab may still be charged after."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        held, self.held = self.held, 0
        if held:
            self.ring.settle(self.key, held, 0, 0)


class Visit:
    """The tabs opened while one request is served, closed when it ends: its own, and
    one for each JSON-RPC call of a batch or MCP tool call made in it."""

    def __init__(self) -> None:
        self.tabs: list[Tab] = []

    def open(self, caller: Caller) -> Tab:
        tab = caller.tab()
        self.tabs.append(tab)
        return tab

    def close(self) -> None:
        for tab in self.tabs:
            tab.close()


VISIT: ContextVar[Visit | None] = ContextVar("heron_visit", default=None)


@dataclass(frozen=True)
class _Room:
    """What one token limit has left for a request (``left``; ``unheld``: were every
    request under way to give back what it holds), and when it resets."""

    left: int
    unheld: int
    limit: str
    total: int
    reset: float

    def wait(self, tokens: int, now: float) -> int:
        """Seconds to wait before ``tokens`` may fit: to the reset if what is spent
        leaves no room for them, else a second (what requests under way hold comes back
        when they end)."""
        return _seconds(self.reset, now) if self.unheld < tokens else 1

    @staticmethod
    def binding(rooms: list[_Room], tokens: int, now: float, whole: int = 0) -> _Room:
        """Of the limits without ``tokens`` left, the one to wait longest for, before
        ``whole`` tokens (``tokens`` and what the request holds already) may fit."""
        whole = max(whole, tokens)
        return max((r for r in rooms if r.left < tokens), key=lambda r: r.wait(whole, now))


@dataclass
class _Watchers:
    """Where to tell the event streams of one key that it was revoked."""

    events: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=set)


#: Seconds between looks at the key store for keys revoked elsewhere (``heron keys
#: revoke`` in another process, another server on the same PostgreSQL), while a key
#: has an event stream open.
REVOKED_POLL = 1.0


class Keyring:
    """One server's view of the keys: finds them, counts their windows, holds and usage
    in memory until the usage is written (``flush``), and tells a revoked key's event
    streams. Thread-safe."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.window = settings.server.keys_window
        self._store: KeyStore | None = None
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        # Requests: a moving window, exact at its edges. Tokens: a fixed window per key
        # with what its requests hold beside what they spent. This process's, or every
        # replica's on PostgreSQL (heron.server.http.windows).
        self._windows = open_windows(settings)
        self._pending: dict[tuple[str, str], list[int]] = {}
        self._month: str = ""
        self._stored: dict[str, int] = {}  # tokens of this month in the store, by key
        self._watchers: dict[str, _Watchers] = {}
        self._revoked: set[str] = set()

    @property
    def store(self) -> KeyStore:
        with self._lock:
            if self._store is None:
                self._store = open_keys(self.settings)
            return self._store

    def identify(self, token: str) -> Key:
        """The live key of ``token``. Raises ``LookupError`` with the 401's message."""
        key = self.store.find(token)
        if key is None:
            raise LookupError(
                "Unknown API key: send 'Authorization: Bearer hk_...' with a key that "
                "heron keys create printed (heron keys list names them)."
            )
        if key.revoked:
            self.revoked(key.name)
            raise LookupError(
                f"The API key {key.name!r} was revoked; ask for a new one (heron keys create)."
            )
        return key

    def signed_in(self, name: str) -> Key:
        """The live key named ``name`` a page was signed in with. Raises ``LookupError``
        with the 401's message when it was revoked (or removed) since."""
        try:
            key = self.store.get(name)
        except NotFound:
            key = None
        if key is None or key.revoked:
            self.revoked(name)
            raise LookupError(
                f"The API key {name!r} this page was signed in with was revoked; sign in "
                "again with a live key (heron keys create) or the server's token."
            )
        return key

    def admit(self, key: Key, *, metered: bool) -> None:
        """Count one request of ``key``, or raise ``OverLimit`` (counting nothing) when
        it is over its requests, or, for a request that spends tokens, has no token left
        (what its requests under way hold counts as spent)."""
        if metered:
            self._check_tokens(key)
        if key.rpm is not None:
            now = time.time()
            reset = self._windows.hit(key.name, key.rpm, now)
            if reset is not None:
                limit = f"{key.rpm} requests per {self.window} s"
                raise self._refused(key, OverLimit(key.name, limit, _seconds(reset, now)))
        self._count(key, requests=1)
        self.metrics.key_requests.labels(key.name, "ok").inc()

    def _check_tokens(self, key: Key) -> None:
        if key.tpm is None and key.monthly_tokens is None:
            return
        self._load_month()
        now = time.time()
        with self._windows.tokens(key.name, now) as tokens, self._lock:
            rooms = self._rooms(key, tokens, now)
        if any(r.left <= 0 for r in rooms):
            room = _Room.binding(rooms, 1, now)
            raise self._refused(key, OverLimit(key.name, room.limit, room.wait(1, now)))

    def reserve(
        self,
        key: Key,
        tokens: int,
        *,
        least: int | None = None,
        wanted: int | None = None,
        own: int = 0,
    ) -> int | None:
        """Hold ``tokens`` of ``key``'s, or as many as are left down to ``least``
        (default: all of them), against every token limit at once; returns those held
        (``None``: the key has no token limit, nothing to hold). Raises ``OverLimit``,
        holding nothing, when not even ``least`` is left. ``wanted`` and ``own``: the
        request's whole reservation and what it holds already, for the refusal's
        message."""
        if key.tpm is None and key.monthly_tokens is None:
            return None
        fewest = tokens if least is None else min(least, tokens)
        self._load_month()
        now = time.time()
        with self._windows.tokens(key.name, now) as window, self._lock:
            rooms = self._rooms(key, window, now)
            left = min(r.left for r in rooms)
            granted = tokens if left >= tokens else max(0, left)
            if granted >= fewest:
                window.held += granted
                return granted
        short = _Room.binding(rooms, fewest, now, fewest + own)
        refusal = OverLimit(
            key.name,
            short.limit,
            short.wait(fewest + own, now),
            wanted=wanted or tokens,
            left=short.left + own,
            total=short.total,
        )
        raise self._refused(key, refusal)

    def _rooms(self, key: Key, tokens: Tokens, now: float) -> list[_Room]:
        """What each of ``key``'s token limits has left, its window's ``tokens`` in hand
        (the lock held)."""
        rooms = []
        if key.tpm is not None:
            unheld = key.tpm - tokens.spent
            limit = f"{key.tpm} tokens per {self.window} s"
            reset = tokens.start + self.window
            rooms.append(_Room(unheld - tokens.held, unheld, limit, key.tpm, reset))
        if key.monthly_tokens is not None:
            unheld = key.monthly_tokens - self._month_tokens(key.name)
            limit = f"{key.monthly_tokens} tokens this month"
            reset = now + seconds_to_next_month(now)
            rooms.append(_Room(unheld - tokens.held, unheld, limit, key.monthly_tokens, reset))
        return rooms

    def _refused(self, key: Key, exc: OverLimit) -> OverLimit:
        self.metrics.key_requests.labels(key.name, "limited").inc()
        return exc

    def forbidden(self, key: Key) -> None:
        self.metrics.key_requests.labels(key.name, "forbidden").inc()

    def settle(self, key: Key, held: int, tokens_in: int, tokens_out: int) -> None:
        """Give back ``held`` tokens ``key``'s work had reserved, and charge what it spent
        (in and out)."""
        tokens_in, tokens_out = max(0, tokens_in), max(0, tokens_out)
        with self._windows.tokens(key.name, time.time()) as tokens:
            tokens.held = max(0, tokens.held - held)
            tokens.spent += tokens_in + tokens_out
        if tokens_in or tokens_out:
            self._count(key, tokens_in=tokens_in, tokens_out=tokens_out)
            self.metrics.key_tokens.labels(key.name, "in").inc(tokens_in)
            self.metrics.key_tokens.labels(key.name, "out").inc(tokens_out)

    def spend(self, key: Key, tokens_in: int, tokens_out: int) -> None:
        """Charge what ``key`` spent without a reservation (it may pass a limit: the next
        request waits)."""
        self.settle(key, 0, tokens_in, tokens_out)

    def _count(self, key: Key, requests: int = 0, tokens_in: int = 0, tokens_out: int = 0) -> None:
        with self._lock:
            counts = self._pending.setdefault((key.name, month_of()), [0, 0, 0])
            counts[0] += requests
            counts[1] += tokens_in
            counts[2] += tokens_out

    def month_tokens(self, key: Key) -> int:
        """``key``'s tokens this month: the store's count as of the last flush, and what
        this server counted since."""
        self._load_month()
        with self._lock:
            return self._month_tokens(key.name)

    def _month_tokens(self, name: str) -> int:
        pending = self._pending.get((name, self._month), [0, 0, 0])
        return self._stored.get(name, 0) + pending[1] + pending[2]

    def _load_month(self) -> None:
        month = month_of()
        if self._month != month:  # the first ask, or a new month: the store's count
            stored = {u.name: u.tokens for u in self.store.usage(month)}
            with self._lock:
                self._month, self._stored = month, stored

    def flush(self) -> None:
        """Write the usage counted since the last flush, then re-read this month's
        totals (other servers on the same database add theirs). What is written stays
        counted here until the totals that hold it are read, so no check misses it."""
        with self._flushing:
            with self._lock:
                written = {k: list(v) for k, v in self._pending.items() if any(v)}
            if not written:
                return
            rows = [KeyUsage(name, month, *counts) for (name, month), counts in written.items()]
            self.store.add_usage(rows)  # on failure the counts wait for the next flush
            month = month_of()
            stored = {u.name: u.tokens for u in self.store.usage(month)}
            with self._lock:
                for where, counts in written.items():
                    left = [a - b for a, b in zip(self._pending[where], counts, strict=True)]
                    if any(left):
                        self._pending[where] = left
                    else:
                        del self._pending[where]
                self._month, self._stored = month, stored

    def usage(self) -> list[KeyUsage]:
        """This month's usage of every key, what is not written yet included."""
        with self._flushing:  # not between a write and the totals that hold it
            month = month_of()
            found = {u.name: u for u in self.store.usage(month)}
            with self._lock:
                pending = {n: list(c) for (n, m), c in self._pending.items() if m == month}
        for name, (requests, tin, tout) in pending.items():
            old = found.get(name, KeyUsage(name, month))
            found[name] = KeyUsage(
                name, month, old.requests + requests, old.tokens_in + tin, old.tokens_out + tout
            )
        return [found[name] for name in sorted(found)]

    # -- revocation: a revoked key's event streams end ------------------------------------

    def watch(self, name: str, event: asyncio.Event) -> None:
        """Set ``event`` (from the running loop) when key ``name`` is revoked."""
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            self._watchers.setdefault(name, _Watchers()).events.add(entry)
            gone = name in self._revoked
        if gone:
            event.set()

    def unwatch(self, name: str, event: asyncio.Event) -> None:
        with self._lock:
            watchers = self._watchers.get(name)
            if watchers is None:
                return
            watchers.events = {e for e in watchers.events if e[1] is not event}
            if not watchers.events:
                del self._watchers[name]

    def revoked(self, name: str) -> None:
        """Key ``name`` was revoked: tell its open event streams (from any thread)."""
        with self._lock:
            self._revoked.add(name)
            watchers = list(self._watchers.get(name, _Watchers()).events)
        for loop, event in watchers:
            with suppress(RuntimeError):  # a loop closed since: nothing left to tell
                loop.call_soon_threadsafe(event.set)

    def is_revoked(self, name: str) -> bool:
        with self._lock:
            return name in self._revoked

    def check_revoked(self) -> None:
        """Look in the store for keys revoked elsewhere among those with a stream open."""
        with self._lock:
            watched = set(self._watchers) - self._revoked
        if not watched:
            return
        for key in self.store.list():
            if key.revoked and key.name in watched:
                self.revoked(key.name)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._lock:
                store, self._store = self._store, None
            if store is not None:
                store.close()
            self._windows.close()


def _seconds(reset: float, now: float) -> int:
    return max(1, math.ceil(reset - now))


def keyring(rt: Runtime) -> Keyring:
    """The server's ``Keyring``, made on first use."""
    return rt.shared("keys", lambda: Keyring(rt.settings, rt.metrics))


def _bearer(scope: Scope) -> str | None:
    scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
    token = given.strip().decode("latin-1")
    return token if scheme.lower() == b"bearer" and token.startswith(PREFIX) else None


def over_limit(path: str, exc: OverLimit) -> Any:
    """A 429 with ``Retry-After`` in the route's error shape (OpenAI's ``type``:
    ``rate_limit_error``, or ``budget_exceeded`` for a budget in money)."""
    return for_path(path, exc.http_status, str(exc), exc.openai_type, headers=retry_after(exc))


def _event_stream(message: Message) -> bool:
    kind = dict(message.get("headers") or []).get(b"content-type", b"")
    return kind.split(b";")[0].strip() == b"text/event-stream"


def revoked_event(path: str, key: Key) -> bytes:
    """The last event of a revoked key's stream: OpenAI's error data line and ``[DONE]``
    on ``/v1`` (what its SDKs read), else ``event: revoked``."""
    message = (
        f"The API key {key.name!r} was revoked; this stream ends here. Ask for a new key "
        "(heron keys create)."
    )
    if path.startswith("/v1/"):
        body = error_body(message, "authentication_error", "key_revoked")
        return f"data: {dumps(body)}\n\ndata: [DONE]\n\n".encode()
    data = {"message": message, "type": "Revoked"}
    return f"event: revoked\ndata: {dumps(data)}\n\n".encode()


class KeyMiddleware:
    """Finds each request's key, then checks its route's scope and the key's limits
    (the module docstring)."""

    def __init__(self, app: ASGIApp, *, ring: Keyring, token: str | None) -> None:
        self.app = app
        self.ring = ring
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The paths TokenMiddleware opens to anyone: no key is asked for there either.
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or is_open(scope["path"]):
            await self.app(scope, receive, send)
            return
        # Cache-Control: no-cache / no-store, for the model calls this request makes.
        header = dict(scope.get("headers") or []).get(b"cache-control", b"")
        control = CACHE_CONTROL.set(CacheControl.from_header(header.decode("latin-1")))
        try:
            await self._keyed(scope, receive, send)
        finally:
            CACHE_CONTROL.reset(control)

    async def _keyed(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        given = _bearer(scope)
        key: Key | None = API_TOKEN if self.token else None
        # A page signed in with a person's own key (heron.server.http.auth) acts as that key.
        person = scope.get("state", {}).get("signed_in") if given is None else None
        if given is not None or person is not None:
            try:
                if given is not None:
                    key = await run_in_threadpool(self.ring.identify, given)
                else:
                    key = await run_in_threadpool(self.ring.signed_in, person)
            except LookupError as exc:
                reply = for_path(
                    path,
                    401,
                    str(exc),
                    "authentication_error",
                    headers={"www-authenticate": 'Bearer realm="heron"'},
                )
                await reply(scope, receive, send)
                return
        scope.setdefault("state", {})["key"] = key
        if key is None:
            await self.app(scope, receive, send)
            return
        rule = rule_for(scope["method"], path)
        needed = ADMIN if rule is None else rule.scope
        if needed is not None and not key.allows(needed):
            self.ring.forbidden(key)
            reply = for_path(path, 403, str(Forbidden(key.name, needed)), "permission_error")
            await reply(scope, receive, send)
            return
        if needed is not None:  # /rpc and /mcp count per call
            try:
                self.ring.admit(key, metered=bool(rule and rule.metered))
            except OverLimit as exc:
                await over_limit(path, exc)(scope, receive, send)
                return
        caller = Caller(key, self.ring)
        visit = Visit()
        tokens = CALLER.set(caller), TAB.set(visit.open(caller)), VISIT.set(visit)
        try:
            if key is API_TOKEN:  # the server's own token: never revoked
                await self.app(scope, receive, send)
            else:
                await self._watched(scope, receive, send, key)
        finally:
            CALLER.reset(tokens[0])
            TAB.reset(tokens[1])
            VISIT.reset(tokens[2])
            visit.close()

    async def _watched(self, scope: Scope, receive: Receive, send: Send, key: Key) -> None:
        """Serve the request; when it answers with an event stream, end that stream as
        soon as the key is revoked, with a last event saying so (``revoked_event``)."""
        revoked = asyncio.Event()
        streaming = ended = False

        async def sending(message: Message) -> None:
            nonlocal streaming, ended
            if ended:
                return
            if message["type"] == "http.response.start" and _event_stream(message):
                streaming = True
                self.ring.watch(key.name, revoked)
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                ended = True

        failed: Exception | None = None
        try:
            async with anyio.create_task_group() as group:

                async def serve() -> None:
                    nonlocal failed
                    try:
                        await self.app(scope, receive, sending)
                    except Exception as exc:  # raised below, not in an ExceptionGroup
                        failed = exc
                    finally:
                        group.cancel_scope.cancel()

                group.start_soon(serve)
                await revoked.wait()
                group.cancel_scope.cancel()  # the stream's generator, and its work, stop
        finally:
            if streaming:
                self.ring.unwatch(key.name, revoked)
        if failed is not None:
            raise failed
        if revoked.is_set() and streaming and not ended:
            log.info("ended an event stream of the revoked key %r", key.name)
            body = revoked_event(scope["path"], key)
            await send({"type": "http.response.body", "body": body, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def check_call(ring: Keyring, key: Key | None, scope: str) -> None:
    """One call of something that needs ``scope`` (an MCP tool): raise ``Forbidden``
    without it, ``OverLimit`` over the key's requests; else count it. No key: nothing
    to check (stdio, a server without a token)."""
    if key is None:
        return
    if not key.allows(scope):
        ring.forbidden(key)
        raise Forbidden(key.name, scope)
    ring.admit(key, metered=False)


@contextmanager
def acting_as(ring: Keyring, key: Key | None) -> Iterator[None]:
    """The block runs as ``key``'s call (``CALLER``), with a tab of its own closed when it
    ends, for a handler that runs outside its request's context: an MCP session's task
    serves every request of the session."""
    caller = None if key is None else Caller(key, ring)
    visit = Visit()
    tab = None if caller is None else visit.open(caller)
    tokens = CALLER.set(caller), TAB.set(tab), VISIT.set(visit)
    try:
        yield
    finally:
        CALLER.reset(tokens[0])
        TAB.reset(tokens[1])
        VISIT.reset(tokens[2])
        visit.close()


def rpc_gate(method: Method) -> None:
    """``Registry.gate``: the call's key must hold ``method.scope`` and be within its
    limits; raises the ``RpcError`` (``FORBIDDEN``, ``RATE_LIMITED``) otherwise. A call
    that spends tokens gets a tab of its own, holding its answer's budget
    (``agent_max_tokens``) before it runs: the calls of a batch are gated one after the
    other before any runs, so together they cannot hold more than the key has."""
    caller = CALLER.get()
    if caller is None:
        return
    key, ring = caller.key, caller.ring
    if not key.allows(method.scope):
        ring.forbidden(key)
        exc = Forbidden(key.name, method.scope)
        raise RpcError(exc.rpc_code, str(exc), {"type": "Forbidden", "scope": method.scope})
    metered = method.name in METERED_METHODS
    try:
        ring.admit(key, metered=metered)
        if metered:
            visit = VISIT.get()
            tab = visit.open(caller) if visit is not None else caller.tab()
            TAB.set(tab)  # the call's own context: its task in a batch, its thread after
            tab.need(ring.settings.agent.max_tokens)
    except OverLimit as exc:
        data = {"type": "OverLimit", "limit": exc.limit, "retry_after": exc.retry_after}
        raise RpcError(exc.rpc_code, str(exc), data) from exc


# -- the feature hooks (heron.server.hooks): keys.* and the usage writer ------------------


class CreateParams(Params):
    name: str = Field(min_length=1, max_length=64, description="The key's name (ci-bot).")
    scopes: list[str] = Field(min_length=1, description=f"Some of: {', '.join(SCOPES)}.")
    context: str | None = Field(default=None, description="The context the key is bound to.")
    rpm: int | None = Field(default=None, ge=1, description="Requests per minute, at most.")
    tpm: int | None = Field(default=None, ge=1, description="Model tokens per minute, at most.")
    monthly_tokens: int | None = Field(
        default=None, ge=1, description="Model tokens per calendar month (UTC), at most."
    )
    models: list[str] | None = Field(
        default=None,
        description="The models it may call: aliases, provider/model, * wildcards; default any.",
    )
    max_budget: float | None = Field(
        default=None, ge=0, description="Dollars its model calls may spend per budget_duration."
    )
    budget_duration: str | None = Field(
        default=None, description="The budget's window: 30s, 15m, 1h, 30d, 1mo; default ever."
    )
    no_cache: bool = Field(default=False, description="Never use the response cache.")


class MonthParams(Params):
    month: str | None = Field(default=None, description="YYYY-MM (UTC); default: this month.")


class NameParams(Params):
    name: str = Field(min_length=1, description="The key's name.")


#: ``keys.create``, ``keys.list``, ``keys.revoke``, ``keys.usage`` and ``keys.spend``:
#: admin only.
rpc = Methods()


@rpc.method("keys.create", CreateParams, summary="Create a key; its token is shown only here.")
def create(p: CreateParams, rt: Runtime) -> dict[str, Any]:
    key, token = keyring(rt).store.create(
        p.name,
        p.scopes,
        context=p.context,
        rpm=p.rpm,
        tpm=p.tpm,
        monthly_tokens=p.monthly_tokens,
        models=p.models,
        max_budget=p.max_budget,
        budget_duration=p.budget_duration,
        no_cache=p.no_cache,
    )
    return key.to_dict() | {"token": token}


@rpc.method("keys.list", summary="The keys, revoked ones too; never a token.")
def list_(_: Params, rt: Runtime) -> list[dict[str, Any]]:
    return [key.to_dict() for key in keyring(rt).store.list()]


@rpc.method("keys.revoke", NameParams, summary="Revoke a key: its token opens nothing.")
def revoke(p: NameParams, rt: Runtime) -> dict[str, Any]:
    ring = keyring(rt)
    key = ring.store.revoke(p.name)
    ring.revoked(key.name)  # its open streams end now
    return key.to_dict()


@rpc.method("keys.usage", summary="This month's requests, tokens and dollars per key.")
def usage(_: Params, rt: Runtime) -> list[dict[str, Any]]:
    ring = keyring(rt)
    dollars: dict[str, float] = {}
    for payer, _model, cost in ring.store.spend():
        if payer.startswith("key:"):
            dollars[payer[4:]] = dollars.get(payer[4:], 0.0) + cost
    return [u.to_dict() | {"spend": round(dollars.get(u.name, 0.0), 6)} for u in ring.usage()]


@rpc.method(
    "keys.spend",
    MonthParams,
    summary="Dollars spent in a month per key, context and model, by model called.",
)
def month_spend(p: MonthParams, rt: Runtime) -> list[dict[str, Any]]:
    return [
        {"kind": payer.partition(":")[0], "name": payer.partition(":")[2], "model": model,
         "spend": round(cost, 6)}
        for payer, model, cost in keyring(rt).store.spend(p.month)
    ]  # fmt: skip


routes = no_routes


@asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    """Write the keys' usage every ``keys_flush`` seconds, and once more at shutdown;
    look for keys revoked elsewhere every ``REVOKED_POLL`` seconds while streams are
    open."""
    ring = keyring(rt)

    async def writer() -> None:
        while True:
            await asyncio.sleep(rt.settings.server.keys_flush)
            try:
                await run_in_threadpool(ring.flush)
            except Exception:  # a busy or lost database: the counts wait for the next try
                log.warning("could not write the keys' usage; retrying", exc_info=True)

    async def revocations() -> None:
        while True:
            await asyncio.sleep(REVOKED_POLL)
            try:
                await run_in_threadpool(ring.check_revoked)
            except Exception:  # the store is busy: the next look finds it
                log.warning("could not look for revoked keys; retrying", exc_info=True)

    tasks = [asyncio.create_task(writer()), asyncio.create_task(revocations())]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        try:
            await run_in_threadpool(ring.close)
        except Exception:  # shutdown goes on; the counts since the last write are lost
            log.exception("could not write the keys' usage at shutdown")
