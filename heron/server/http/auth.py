"""The server's token (``HERON_API_TOKEN``, ``api_token``), the web page's sessions, and
the throttle on wrong credentials; ``heron.server.http.middleware.TokenMiddleware`` applies
them on every route, ``heron.server.web.pages`` signs in and out with them (``guard(rt)``, one
per server).

**Sessions.** The sign-in form posts the token; when it matches (compared in constant
time) the answer sets a session cookie, ``HttpOnly; SameSite=Strict``: a random id and
its HMAC under the token, never the token itself. The server keeps each live id (its
hash), with an expiry (``HERON_SERVER_SESSION_TTL``); sign-out deletes it, so a cookie
copied before sign-out opens nothing after. A restart, or a new token, signs every
browser out. The cookie alone authorises only ``GET``/``HEAD`` (pages, static files,
event streams); any other method also needs the ``X-Heron-CSRF`` header holding the
session's CSRF value (an HMAC of its id), which the page reads from its own
``<meta name="heron-csrf">``. A cross-site page can neither read that value nor send a
custom header without a CORS preflight, which the Origin check refuses.

**Throttle.** A wrong bearer token or sign-in is answered after a delay
(``HERON_SERVER_AUTH_DELAY``), and a client (its address) that got
``HERON_SERVER_AUTH_FAILURES`` wrong within ``HERON_SERVER_AUTH_WINDOW`` seconds is
answered 429 with ``Retry-After`` until the window has room again, whatever it sends:
a right guess among the refused ones would otherwise tell it apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import Scope

from heron.errors import HeronError, InputError
from heron.resource import Resource
from heron.server.http.origins import STATIC
from heron.server.http.signins import RECHECK, SignIns, open_signins
from heron.server.http.windows import MemoryWindows, Windows, open_windows
from heron.server.runtime import Runtime
from heron.settings import Settings

log = logging.getLogger("heron.server")

COOKIE = "heron_session"
CSRF_HEADER = b"x-heron-csrf"
#: Paths anyone may fetch: signing in and out, and the page's own scripts and styles.
OPEN = ("/signin", "/signout")
#: The pages; asked for without a token they send the browser to the sign-in form.
PAGES = ("/", "/libraries", "/skills", "/tools", "/jobs", "/interventions", "/operations")
#: Pages that are no pane: a cited source (``/source``), opened from a passage, and a
#: document's original file (``/source/file``), opened at its cited page.
VIEWS = ("/source", "/source/file")
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: Live sessions kept at most; past it the one closest to expiring goes first.
MAX_SESSIONS = 1024
#: Fields a sign-in form has (``token``, ``next``) with room to spare; more is no form.
FORM_FIELDS = 8


def is_open(path: str) -> bool:
    return path in OPEN or path.startswith(STATIC)


def client_of(scope: Scope) -> str:
    """Whom the throttle counts: the client's address (``unix`` over a Unix socket)."""
    client = scope.get("client")
    return str(client[0]) if client and client[0] else "unix"


class Sessions:
    """The signed-in browsers: each session's id hashed, with its expiry. Thread-safe.
    With ``shared`` (PostgreSQL), every replica's (``heron.server.http.signins``): a session
    this replica does not know is looked up there, one it knows again every ``RECHECK``
    seconds (a sign-out elsewhere)."""

    def __init__(self, token: bytes, ttl: float, shared: SignIns | None = None) -> None:
        self._key = token
        self.ttl = ttl
        self._live: dict[str, float] = {}
        self._checked: dict[str, float] = {}  # when the database last confirmed each
        self._keys: dict[str, str | None] = {}  # the named key each was signed in with
        self._shared = shared
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the shared sign-ins (PostgreSQL), if any."""
        if self._shared is not None:
            self._shared.close()

    def _sign(self, sid: str) -> str:
        return hmac.new(self._key, b"heron-session:" + sid.encode(), "sha256").hexdigest()

    @staticmethod
    def _hash(sid: str) -> str:
        return hashlib.sha256(sid.encode()).hexdigest()

    def new(self, key: str | None = None) -> str:
        """A new session, of the named key ``key`` (``None``: of the server's token); the
        cookie's value."""
        sid = secrets.token_urlsafe(32)
        now, digest = time.monotonic(), self._hash(sid)
        with self._lock:
            self._live = {h: t for h, t in self._live.items() if t > now}
            while len(self._live) >= MAX_SESSIONS:
                del self._live[min(self._live, key=self._live.__getitem__)]
            self._checked = {h: t for h, t in self._checked.items() if h in self._live}
            self._keys = {h: k for h, k in self._keys.items() if h in self._live}
            self._live[digest] = now + self.ttl
            self._checked[digest] = now
            self._keys[digest] = key
        if self._shared is not None:
            self._shared.add(digest, time.time() + self.ttl, key)
        return f"{sid}.{self._sign(sid)}"

    def session_id(self, cookie: str | None) -> str | None:
        """The id of the live session ``cookie`` holds; ``None`` for a forged, expired or
        revoked one."""
        sid, _, signature = (cookie or "").partition(".")
        if not sid or not hmac.compare_digest(signature.encode(), self._sign(sid).encode()):
            return None
        now, digest = time.monotonic(), self._hash(sid)
        with self._lock:
            expires = self._live.get(digest)
            checked = self._checked.get(digest, float("-inf"))
        if self._shared is not None and now - checked >= RECHECK:
            expires = self._recheck(self._shared, digest, now, expires)
        return sid if expires is not None and expires > now else None

    def _recheck(
        self, shared: SignIns, digest: str, now: float, known: float | None
    ) -> float | None:
        """The session's expiry as the database has it now (in this record's clock); the
        one known here while the database cannot be reached."""
        try:
            found = shared.find(digest)
        except HeronError as exc:
            log.warning("sign-in not checked with the database: %s", exc)
            return known
        with self._lock:
            if found is None:  # signed out elsewhere, or never signed in
                self._live.pop(digest, None)
                self._checked.pop(digest, None)
                return None
            ends, self._keys[digest] = found
            expires = self._live[digest] = now + (ends - time.time())
            self._checked[digest] = now
            return expires

    def key_of(self, sid: str) -> str | None:
        """The named key live session ``sid`` was signed in with (``None``: the token)."""
        with self._lock:
            return self._keys.get(self._hash(sid))

    def revoke(self, cookie: str | None) -> None:
        sid = self.session_id(cookie)
        if sid is not None:
            digest = self._hash(sid)
            with self._lock:
                self._live.pop(digest, None)
                self._checked.pop(digest, None)
                self._keys.pop(digest, None)
            if self._shared is not None:
                self._shared.remove(digest)

    def csrf(self, sid: str) -> str:
        """The CSRF value of session ``sid``."""
        return hmac.new(self._key, b"heron-web-csrf:" + sid.encode(), "sha256").hexdigest()


class Throttle:
    """Wrong credentials per client: each answered after ``delay`` seconds; ``failures``
    of them within ``window`` seconds and the client is refused until the window has room.
    Counted in this process, or across replicas on PostgreSQL (``heron.server.http.windows``:
    a client refused by one replica is refused by all)."""

    def __init__(self, windows: Windows, failures: int, delay: float) -> None:
        self.windows = windows
        self.failures = failures
        self.delay = delay

    def close(self) -> None:
        self.windows.close()

    async def retry_after(self, client: str) -> int:
        """Seconds ``client`` must wait before it may try a credential again (0: now)."""
        now = time.time()
        reset = await self._ask(self.windows.peek, f"signin:{client}", self.failures, now)
        return 0 if reset is None else max(1, math.ceil(reset - now))

    async def failed(self, client: str) -> None:
        """Count a wrong credential of ``client``, then wait the delay."""
        await self._ask(self.windows.hit, f"signin:{client}", self.failures, time.time())
        await asyncio.sleep(self.delay)

    async def _ask(self, call: Callable[..., float | None], *args: Any) -> float | None:
        # The database's windows are a round trip: off the event loop.
        if isinstance(self.windows, MemoryWindows):
            return call(*args)
        return await asyncio.to_thread(call, *args)


@dataclass
class Guard(Resource):
    """What checks credentials on one server: its token (``None``: no check), the web
    page's sessions and the throttle."""

    token: bytes | None
    sessions: Sessions
    throttle: Throttle

    @classmethod
    def build(cls, settings: Settings) -> Guard:
        token = settings.server.bearer_token
        secret = token.encode() if token else None
        return cls(
            secret,
            Sessions(
                secret or b"",
                settings.server.session_ttl,
                open_signins(settings) if secret else None,  # no token: no sign-in
            ),
            Throttle(
                open_windows(settings, settings.server.auth_window),
                settings.server.auth_failures,
                settings.server.auth_delay,
            ),
        )

    def close(self) -> None:
        """Close what it holds on PostgreSQL: the shared sign-ins and the throttle's
        windows (the runtime closes it with the server)."""
        self.sessions.close()
        self.throttle.close()

    def bearer_ok(self, given: bytes) -> bool:
        return self.token is not None and hmac.compare_digest(given.strip(), self.token)

    def token_ok(self, given: str) -> bool:
        """The sign-in form's token (compared in constant time)."""
        return self.token is not None and hmac.compare_digest(
            given.strip().encode("utf-8", "replace"), self.token
        )

    def session_of(self, scope: Scope) -> str | None:
        """The live session the request's cookie names."""
        return self.sessions.session_id(cookie_of(scope))

    def cookie_authorized(self, scope: Scope) -> bool:
        """A live session's cookie, and for an unsafe method its CSRF header. The named
        key the session was signed in with, if any, goes on the request's state
        (``signed_in``): ``heron.server.features.keys.KeyMiddleware`` acts as that key."""
        sid = self.session_of(scope)
        if sid is None:
            return False
        if scope["method"] not in SAFE_METHODS:
            header = dict(scope["headers"]).get(CSRF_HEADER, b"")
            if not hmac.compare_digest(header, self.sessions.csrf(sid).encode()):
                return False
        scope.setdefault("state", {})["signed_in"] = self.sessions.key_of(sid)
        return True

    def page_csrf(self, scope: Scope) -> str:
        """The CSRF value a page rendered for this request carries ("" with no session)."""
        sid = self.session_of(scope) if self.token is not None else None
        return self.sessions.csrf(sid) if sid else ""


def guard(rt: Runtime) -> Guard:
    """The server's ``Guard``, made on first use."""
    return rt.shared("auth.guard", lambda: Guard.build(rt.settings))


def cookie_of(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no session
                return None
            if COOKIE in jar:
                return jar[COOKIE].value
    return None


def refusal(scope: Scope) -> Response | None:
    """For a page asked for without the token: a redirect to the sign-in form."""
    if scope["method"] in SAFE_METHODS and scope["path"] in PAGES + VIEWS:
        return RedirectResponse(f"/signin?next={quote(scope['path'])}", status_code=303)
    return None


def local_next(value: str | None) -> str:
    """Where to go after signing in: one of the pages, never another site."""
    return value if value in PAGES else "/"


def signed_in(cookie: str, secure: bool, to: str) -> Response:
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(COOKIE, cookie, httponly=True, samesite="strict", secure=secure, path="/")
    return response


async def form_fields(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (the body is bounded by ``BodyMiddleware``);
    ``InputError`` for one with more fields than a sign-in form has."""
    body = (await request.body()).decode("utf-8", "replace")
    try:
        return {k: v[0] for k, v in parse_qs(body, max_num_fields=FORM_FIELDS).items()}
    except ValueError as exc:  # parse_qs: "Max number of fields exceeded"
        raise InputError(f"A sign-in form has at most {FORM_FIELDS} fields.") from exc
