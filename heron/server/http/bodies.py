"""``BodyMiddleware``: what a request may carry, for every route at once.

- **POST takes JSON only.** Every ``POST`` (``/rpc``, ``/v1/*``, ``/chat/stream``,
  ``/interventions/{id}/outcome``, and any route added later) needs ``Content-Type:
  application/json`` (``; charset=utf-8`` allowed); anything else (``text/plain``, forms,
  none) is 415. The exceptions are named: the web page's sign-in and sign-out forms,
  ``/mcp``, whose SDK checks its own content types, and ``/upload/`` (files, as
  multipart: a route a browser reaches from Heron's own pages alone,
  ``heron.server.http.origins.OWN_PAGES_ONLY``). A web page can send ``text/plain`` or a form to
  any address without asking (no CORS preflight), but not ``application/json``: this is
  the second lock on cross-site requests, beside the Origin check.
- **Bodies are bounded** (``HERON_SERVER_MAX_BODY``; an upload of files,
  ``HERON_LIBRARY_UPLOAD_MAX_BYTES`` and its framing). A ``Content-Length`` over the limit
  is 413 before a byte is read; a chunked body is counted as it streams in, and the
  moment it passes the limit the app stops receiving (it sees the client leave), its
  reply is dropped, the client gets 413 and the connection is closed: the rest is never
  read.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heron.server.http.replies import for_path

#: Where files are added to a library (``heron.server.features.uploads``): a multipart body.
UPLOADS = "/upload/"
#: Bytes an upload's body may hold past its files: the multipart framing of each part.
UPLOAD_FRAMING = 1024 * 1024
#: ``POST`` to these may carry another body: exact paths, and prefixes ending in ``/``.
#: A new route is JSON-only unless it is listed here (refusing is the safe default).
NOT_JSON_ROUTES = ("/signin", "/signout", "/mcp", "/mcp/", UPLOADS, "/v1/audio/transcriptions")


def takes_json(method: str, path: str) -> bool:
    return method == "POST" and not any(
        path.startswith(route) if route.endswith("/") else path == route
        for route in NOT_JSON_ROUTES
    )


def is_json(content_type: str | None) -> bool:
    """``application/json``, optionally with ``charset=utf-8`` (RFC 8259: JSON is UTF-8)."""
    media, *params = (content_type or "").split(";")
    if media.strip().lower() != "application/json":
        return False
    for param in filter(str.strip, params):
        key, _, value = param.partition("=")
        if key.strip().lower() != "charset" or value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            return False
    return True


class BodyMiddleware:
    """415 for a JSON route's non-JSON body, 413 past ``max_body`` bytes; see the module."""

    def __init__(
        self, app: ASGIApp, *, max_body: int, larger: Mapping[str, tuple[int, str]] | None = None
    ) -> None:
        self.app = app
        self.max_body = max_body
        #: Path prefixes whose bodies have a bound of their own, and the setting naming it.
        self.larger = dict(larger or {})

    def bound(self, path: str) -> tuple[int, str]:
        """The most bytes a body to ``path`` may hold, and the setting that says so."""
        for prefix, bound in self.larger.items():
            if path.startswith(prefix):
                return bound
        return self.max_body, "HERON_SERVER_MAX_BODY"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method, path = scope["method"], scope["path"]
        if takes_json(method, path) and not is_json(headers.get("content-type")):
            given = headers.get("content-type")
            message = (
                f"{method} {path} takes JSON only: send the body with 'Content-Type: "
                f"application/json' (this request had {given!r})."
            )
            await for_path(path, 415, message, "unsupported_media_type")(scope, receive, send)
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.bound(path)[0]:
            await self.too_large(scope, receive, send)
            return
        await self.limited(scope, receive, send)

    async def limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app, counting the body as it arrives (chunked bodies declare no size)."""
        most = self.bound(scope["path"])[0]
        received = 0
        over = started = False

        async def counted() -> Message:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > most:
                    # Telling the app the client left stops it reading; the 413 is sent below.
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if over and not started:
                return  # the app's answer to a body it never got whole
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not over:  # the app failing on the cut body is expected; anything else is not
                raise
        if over and not started:
            await self.too_large(scope, receive, send)

    async def too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        most, setting = self.bound(scope["path"])
        message = (
            f"The request body is over {most} bytes ({setting}); send less, or raise the limit."
        )
        # Closing the connection is what stops the reading: uvicorn would otherwise go on
        # taking (and dropping) whatever the client still sends, for as long as it sends.
        response = for_path(
            scope["path"], 413, message, "request_too_large", headers={"connection": "close"}
        )
        await response(scope, receive, send)
