"""``RequestMiddleware``: a request id, an access log line and the request metrics, for
every HTTP request; ``TokenMiddleware``: the bearer token check. Pure ASGI, so streams
pass through untouched.

The app stacks them (outermost first): ``RequestMiddleware``, ``HostOriginMiddleware``
(``heron.server.origins``), CORS for listed origins, ``TokenMiddleware``, ``BodyMiddleware``
(``heron.server.bodies``). So every refusal is logged and counted with its request id, a
browser's preflight is answered before a token is asked for (browsers send none), and
no body is read for a request that is refused anyway."""

from __future__ import annotations

import hmac
import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heron.server.logs import request_id
from heron.server.metrics import Metrics
from heron.server.replies import for_path

log = logging.getLogger("heron.server.access")

_GOOD_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
#: Paths reachable without the token: liveness probes carry no secrets.
OPEN_PATHS = frozenset({"/health"})
#: Metric labels: a known path prefix, so unknown URLs cannot grow the label set.
KNOWN = ("/rpc", "/v1/chat/completions", "/v1/embeddings", "/v1/models", "/chat/stream",
         "/mcp", "/jobs", "/health", "/ready", "/metrics")  # fmt: skip


def path_label(path: str) -> str:
    return next((k for k in KNOWN if path == k or path.startswith(k + "/")), "other")


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
            label = path_label(scope["path"])
            self.metrics.observe("http", label, seconds, ok=status < 500)
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
    """401 unless the request carries ``Authorization: Bearer <token>``; no check when the
    server has no token (loopback), and none for ``OPEN_PATHS``."""

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    def authorized(self, scope: Scope) -> bool:
        if self.token is None or scope["path"] in OPEN_PATHS:
            return True
        headers = dict(scope["headers"])
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.authorized(scope):
            await self.app(scope, receive, send)
            return
        message = (
            "Missing or wrong bearer token: send 'Authorization: Bearer $HERON_API_TOKEN' "
            "(the token the server was started with)."
        )
        response = for_path(
            scope["path"],
            401,
            message,
            "authentication_error",
            headers={"www-authenticate": 'Bearer realm="heron"'},
        )
        await response(scope, receive, send)
