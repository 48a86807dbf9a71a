"""``RequestMiddleware``: a request id, an access log line and the request metrics, for
every HTTP request; ``TokenMiddleware``: the bearer token check. Pure ASGI, so streams
pass through untouched.

The app stacks them (outermost first): ``RequestMiddleware``, ``HostOriginMiddleware``
(``heron.server.http.origins``), CORS for listed origins, ``TokenMiddleware``,
``KeyMiddleware`` (``heron.server.features.keys``: named keys, scopes and limits),
``ContextMiddleware`` (``heron.server.http.contexts``: after the key, which may bind one),
``BodyMiddleware`` (``heron.server.http.bodies``). So every refusal is logged and counted with
its request id, a browser's preflight is answered before a token is asked for (browsers
send none), and no body is read for a request that is refused anyway."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heron.keys import PREFIX
from heron.server.features.metrics import Metrics
from heron.server.http import auth
from heron.server.http.logs import request_id
from heron.server.http.replies import for_path

log = logging.getLogger("heron.server.access")

_GOOD_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
#: Where a command proves a server is its home's (``heron.server.features.local``).
HELLO = "/local/hello"
#: Paths reachable without the token: liveness probes carry no secrets, nor does the
#: hello (an HMAC under a secret used for nothing else).
OPEN_PATHS = frozenset({"/health", HELLO})
#: How a named API key's token starts (``heron.keys``), as the headers carry it.
KEY_PREFIX = PREFIX.encode()
#: The metrics' route of a request no route took (refused before routing, or a 404).
UNMATCHED = "unmatched"
#: Methods counted by name; any other is ``OTHER``, so no client can grow the label set.
METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"})


def route_label(scope: Scope) -> str:
    """The template of the route that took the request (``/chat/stream/{stream_id}``),
    which Starlette's router leaves in ``scope["route"]``; ``UNMATCHED`` when none did."""
    return getattr(scope.get("route"), "path", None) or UNMATCHED


class RequestMiddleware:
    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _GOOD_ID.match(given) else uuid.uuid4().hex[:16]
        token = request_id.set(rid)
        start = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - start
            method = scope["method"] if scope["method"] in METHODS else "OTHER"
            self.metrics.observe_http(route_label(scope), method, status, seconds)
            log.info(
                "request",
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "seconds": round(seconds, 6),
                },
            )
            request_id.reset(token)


class TokenMiddleware:
    """401 unless the request carries ``Authorization: Bearer <token>`` or a live sign-in
    session (``heron.server.http.auth``); no check when the server has no token (loopback),
    and none for ``OPEN_PATHS``. A wrong token is answered after the throttle's delay,
    and a client with too many wrong ones is answered 429 (``Retry-After``)."""

    def __init__(self, app: ASGIApp, *, guard: auth.Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if (
            scope["type"] != "http"
            or self.guard.token is None
            or path in OPEN_PATHS
            or auth.is_open(path)
        ):
            await self.app(scope, receive, send)
            return
        scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and given.strip().startswith(KEY_PREFIX):
            # A named key: KeyMiddleware finds it or answers the 401 (a key is 32 random
            # bytes: guessing one is no use, so it is not throttled here).
            await self.app(scope, receive, send)
            return
        if scheme.lower() == b"bearer":
            client = auth.client_of(scope)
            wait = await self.guard.throttle.retry_after(client)
            if wait:
                await throttled(path, wait)(scope, receive, send)
                return
            if self.guard.bearer_ok(given):
                await self.app(scope, receive, send)
                return
            await self.guard.throttle.failed(client)
        elif self.guard.cookie_authorized(scope):
            await self.app(scope, receive, send)
            return
        else:
            page = auth.refusal(scope)  # a browser asking for a page: the sign-in form
            if page is not None:
                await page(scope, receive, send)
                return
        message = (
            "Missing or wrong bearer token: send 'Authorization: Bearer $HERON_API_TOKEN' "
            "(the token the server was started with)."
        )
        response = for_path(
            path,
            401,
            message,
            "authentication_error",
            headers={"www-authenticate": 'Bearer realm="heron"'},
        )
        await response(scope, receive, send)


def throttled(path: str, wait: int) -> Response:
    """The 429 of a client with too many wrong credentials."""
    message = (
        f"Too many wrong tokens from this client: try again in {wait} s. Check "
        "HERON_API_TOKEN: it is the token the server was started with."
    )
    return for_path(path, 429, message, "rate_limited", headers={"retry-after": str(wait)})
