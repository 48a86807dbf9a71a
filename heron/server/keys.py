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
  tool its own (``heron.server.mcp``). Without it: 403 naming the scope (OpenAI's error
  shape; JSON-RPC ``FORBIDDEN`` -32010; an MCP tool error).
- **Limits.** ``rpm``: requests per window (``HERON_KEYS_WINDOW``, 60 s), a JSON-RPC
  call counting as one (a batch of ten is ten); ``tpm``: model tokens (in and out) per
  window; ``monthly_tokens``: per calendar month (UTC). Over one: 429 with
  ``Retry-After`` (JSON-RPC ``RATE_LIMITED`` -32029, ``retry_after`` in ``data``). The
  token limits are checked before a request that spends tokens (``METERED``) and charged
  with what it spent after, so the request that crosses a limit finishes and the next
  one waits. Windows are counted in memory by the ``limits`` library, per server; the
  monthly budget is counted in the key store, which servers on one PostgreSQL share.
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
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

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
from heron.server.auth import is_open
from heron.server.hooks import no_routes
from heron.server.metrics import Metrics
from heron.server.middleware import OPEN_PATHS
from heron.server.replies import for_path
from heron.server.rpc import FORBIDDEN, RATE_LIMITED, Method, Params, Registry, RpcError
from heron.server.runtime import Runtime
from heron.settings import Settings

log = logging.getLogger("heron.server.keys")

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
    _rule("/mcp/?", None),
    _rule("/v1/chat/completions", "chat", metered=True),
    _rule("/chat/stream(/[^/]+)?", "chat", metered=True),
    _rule("/v1/embeddings", "read", metered=True),
    _rule("/v1/models(/.*)?", "read"),
    _rule("/jobs/stream|/jobs/[^/]+/events/stream", "jobs"),
    _rule("/interventions/[0-9]+/outcome", "chat", "POST"),
    _rule("/interventions/stream|/interventions/audio/[^/]+", "read", "GET", "HEAD"),
    _rule("/ready|/metrics", "read", "GET", "HEAD"),
    # The page and its panes (heron.web): reading; what they do goes through the above.
    _rule(
        "/|/libraries|/skills|/tools|/jobs|/interventions|/operations|/source",
        "read",
        "GET",
        "HEAD",
    ),
)
#: JSON-RPC methods that spend model tokens: checked against the token limits first.
METERED_METHODS = frozenset({"agent.chat"})


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


def spend(tokens_in: int, tokens_out: int) -> None:
    """Charge the request's key with the model tokens its answer spent."""
    caller = CALLER.get()
    if caller is not None:
        caller.ring.spend(caller.key, tokens_in, tokens_out)


def key_of(request: Any) -> Key | None:
    """The key a request (a Starlette ``Request``, or ``None`` over stdio) came with."""
    state = getattr(request, "scope", {}).get("state") or {}
    return state.get("key")


class Keyring:
    """One server's view of the keys: finds them, counts their windows in memory and
    their usage until it is written (``flush``). Thread-safe."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.window = settings.keys_window
        self._store: KeyStore | None = None
        self._lock = threading.Lock()
        # Requests: a moving window, exact at its edges. Tokens: a fixed one, because
        # an answer is charged after it ran and may overshoot, which a moving window
        # would refuse to record; the next request then waits for the window's end.
        self._requests = MovingWindowRateLimiter(MemoryStorage())
        self._tokens = FixedWindowRateLimiter(MemoryStorage())
        self._pending: dict[tuple[str, str], list[int]] = {}
        self._month: str = ""
        self._stored: dict[str, int] = {}  # tokens of this month in the store, by key

    @property
    def store(self) -> KeyStore:
        with self._lock:
            if self._store is None:
                self._store = open_keys(self.settings)
            return self._store

    def _item(self, amount: int) -> RateLimitItem:
        return RateLimitItemPerSecond(amount, self.window)

    def identify(self, token: str) -> Key:
        """The live key of ``token``. Raises ``LookupError`` with the 401's message."""
        key = self.store.find(token)
        if key is None:
            raise LookupError(
                "Unknown API key: send 'Authorization: Bearer hk_...' with a key that "
                "heron keys create printed (heron keys list names them)."
            )
        if key.revoked:
            raise LookupError(
                f"The API key {key.name!r} was revoked; ask for a new one (heron keys create)."
            )
        return key

    def admit(self, key: Key, *, metered: bool) -> None:
        """Count one request of ``key``, or raise ``OverLimit`` (counting nothing) when
        it is over its requests, or, for a request that spends tokens, its tokens."""
        if metered:
            self._check_tokens(key)
        if key.rpm is not None:
            item = self._item(key.rpm)
            if not self._requests.hit(item, "rpm", key.name):
                reset = self._requests.get_window_stats(item, "rpm", key.name)[0]  # reset time
                self._refuse(key, f"{key.rpm} requests per {self.window} s", reset)
        self._count(key, requests=1)
        self.metrics.key_requests.labels(key.name, "ok").inc()

    def _check_tokens(self, key: Key) -> None:
        if key.tpm is not None:
            item = self._item(key.tpm)
            if not self._tokens.test(item, "tpm", key.name):
                reset = self._tokens.get_window_stats(item, "tpm", key.name)[0]  # reset time
                self._refuse(key, f"{key.tpm} tokens per {self.window} s", reset)
        if key.monthly_tokens is not None and self.month_tokens(key) >= key.monthly_tokens:
            wait = seconds_to_next_month()
            self._refuse(key, f"{key.monthly_tokens} tokens this month", time.time() + wait)

    def _refuse(self, key: Key, limit: str, reset: float) -> None:
        self.metrics.key_requests.labels(key.name, "limited").inc()
        raise OverLimit(key.name, limit, max(1, math.ceil(reset - time.time())))

    def forbidden(self, key: Key) -> None:
        self.metrics.key_requests.labels(key.name, "forbidden").inc()

    def spend(self, key: Key, tokens_in: int, tokens_out: int) -> None:
        total = max(0, tokens_in) + max(0, tokens_out)
        if total and key.tpm is not None:
            self._tokens.hit(self._item(key.tpm), "tpm", key.name, cost=total)
        self._count(key, tokens_in=max(0, tokens_in), tokens_out=max(0, tokens_out))
        self.metrics.key_tokens.labels(key.name, "in").inc(max(0, tokens_in))
        self.metrics.key_tokens.labels(key.name, "out").inc(max(0, tokens_out))

    def _count(self, key: Key, requests: int = 0, tokens_in: int = 0, tokens_out: int = 0) -> None:
        with self._lock:
            counts = self._pending.setdefault((key.name, month_of()), [0, 0, 0])
            counts[0] += requests
            counts[1] += tokens_in
            counts[2] += tokens_out

    def month_tokens(self, key: Key) -> int:
        """``key``'s tokens this month: the store's count as of the last flush, and what
        this server counted since."""
        month = month_of()
        if self._month != month:  # the first ask, or a new month: the store's count
            self._reload(month)
        with self._lock:
            pending = self._pending.get((key.name, month), [0, 0, 0])
            return self._stored.get(key.name, 0) + pending[1] + pending[2]

    def _reload(self, month: str) -> None:
        stored = {u.name: u.tokens for u in self.store.usage(month)}
        with self._lock:
            self._month, self._stored = month, stored

    def flush(self) -> None:
        """Write the usage counted since the last flush, then re-read this month's
        totals (other servers on the same database add theirs)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        rows = [KeyUsage(name, month, *counts) for (name, month), counts in pending.items()]
        try:
            self.store.add_usage(rows)
        except Exception:
            with self._lock:  # kept for the next flush rather than lost
                for row in rows:
                    counts = self._pending.setdefault((row.name, row.month), [0, 0, 0])
                    counts[0] += row.requests
                    counts[1] += row.tokens_in
                    counts[2] += row.tokens_out
            raise
        self._reload(month_of())

    def usage(self) -> list[KeyUsage]:
        """This month's usage of every key, what is not written yet included."""
        month = month_of()
        found = {u.name: u for u in self.store.usage(month)}
        with self._lock:
            pending = {n: c for (n, m), c in self._pending.items() if m == month}
        for name, (requests, tin, tout) in pending.items():
            old = found.get(name, KeyUsage(name, month))
            found[name] = KeyUsage(
                name, month, old.requests + requests, old.tokens_in + tin, old.tokens_out + tout
            )
        return [found[name] for name in sorted(found)]

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._lock:
                store, self._store = self._store, None
            if store is not None:
                store.close()


def keyring(rt: Runtime) -> Keyring:
    """The server's ``Keyring``, made on first use."""
    return rt.shared("keys", lambda: Keyring(rt.settings, rt.metrics))


def _bearer(scope: Scope) -> str | None:
    scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
    token = given.strip().decode("latin-1")
    return token if scheme.lower() == b"bearer" and token.startswith(PREFIX) else None


def over_limit(path: str, exc: OverLimit) -> Any:
    """A 429 with ``Retry-After`` in the route's error shape."""
    return for_path(path, 429, str(exc), "rate_limit_error", headers=retry_after(exc))


def retry_after(exc: OverLimit) -> dict[str, str]:
    return {"retry-after": str(exc.retry_after)}


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
        path = scope["path"]
        given = _bearer(scope)
        key: Key | None = API_TOKEN if self.token else None
        if given is not None:
            try:
                key = await run_in_threadpool(self.ring.identify, given)
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
        token = CALLER.set(Caller(key, self.ring))
        try:
            await self.app(scope, receive, send)
        finally:
            CALLER.reset(token)


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
    """The block runs as ``key``'s call (``CALLER``), for a handler that runs outside
    its request's context: an MCP session's task serves every request of the session."""
    token = CALLER.set(None if key is None else Caller(key, ring))
    try:
        yield
    finally:
        CALLER.reset(token)


def rpc_gate(method: Method) -> None:
    """``Registry.gate``: the call's key must hold ``method.scope`` and be within its
    limits; raises the ``RpcError`` (``FORBIDDEN``, ``RATE_LIMITED``) otherwise."""
    caller = CALLER.get()
    if caller is None:
        return
    key, ring = caller.key, caller.ring
    if not key.allows(method.scope):
        ring.forbidden(key)
        exc = Forbidden(key.name, method.scope)
        raise RpcError(FORBIDDEN, str(exc), {"type": "Forbidden", "scope": method.scope})
    try:
        ring.admit(key, metered=method.name in METERED_METHODS)
    except OverLimit as exc:
        data = {"type": "OverLimit", "limit": exc.limit, "retry_after": exc.retry_after}
        raise RpcError(RATE_LIMITED, str(exc), data) from exc


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


class NameParams(Params):
    name: str = Field(min_length=1, description="The key's name.")


def register(registry: Registry, rt: Runtime) -> None:
    """``keys.create``, ``keys.list``, ``keys.revoke`` and ``keys.usage``: admin only."""
    ring = keyring(rt)
    method = registry.method

    @method("keys.create", CreateParams, summary="Create a key; its token is shown only here.")
    def create(p: CreateParams) -> dict[str, Any]:
        key, token = ring.store.create(
            p.name,
            p.scopes,
            context=p.context,
            rpm=p.rpm,
            tpm=p.tpm,
            monthly_tokens=p.monthly_tokens,
        )
        return key.to_dict() | {"token": token}

    @method("keys.list", summary="The keys, revoked ones too; never a token.")
    def list_(_: Params) -> list[dict[str, Any]]:
        return [key.to_dict() for key in ring.store.list()]

    @method("keys.revoke", NameParams, summary="Revoke a key: its token opens nothing.")
    def revoke(p: NameParams) -> dict[str, Any]:
        return ring.store.revoke(p.name).to_dict()

    @method("keys.usage", summary="This month's requests and tokens per key.")
    def usage(_: Params) -> list[dict[str, Any]]:
        return [u.to_dict() for u in ring.usage()]


routes = no_routes


@asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    """Write the keys' usage every ``keys_flush`` seconds, and once more at shutdown."""
    ring = keyring(rt)

    async def writer() -> None:
        while True:
            await asyncio.sleep(rt.settings.keys_flush)
            try:
                await run_in_threadpool(ring.flush)
            except Exception:  # a busy or lost database: the counts wait for the next try
                log.warning("could not write the keys' usage; retrying", exc_info=True)

    task = asyncio.create_task(writer())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        try:
            await run_in_threadpool(ring.close)
        except Exception:  # shutdown goes on; the counts since the last write are lost
            log.exception("could not write the keys' usage at shutdown")
