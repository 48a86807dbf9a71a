"""Which context a request is in: ``ContextMiddleware`` picks it, ``runtime_of`` hands
an endpoint that context's runtime (``Runtime.within``).

A request names its context with the ``X-Heron-Context`` header; a page of the web
interface also with ``?context=NAME`` (a browser cannot add a header to a link; the
page's script then sends the header on every call). A key bound to a context
(``request.state.key.context``, set by the key check before this middleware) puts its
requests there: naming another is a 403, naming none is its own. With neither, the
request is in the server's context (``default``). An invalid name is a 400, a context
heron.toml does not define a 404 naming the defined ones, both in the route's error
shape, before any route runs. The name chosen is left in ``request.state.context``.
The contexts are the server's settings', which ``heron.server.features.reload`` replaces in place
when heron.toml changes: a context added there is served without a restart.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from heron.core.contexts import DEFAULT, HEADER, check_context_name
from heron.errors import HeronError, InputError
from heron.server.http import auth
from heron.server.http.replies import for_path
from heron.server.runtime import Runtime
from heron.settings import Settings

_HEADER = HEADER.lower().encode()
#: The query parameter naming a page's context.
PAGE_PARAM = "context"
#: After a 404 for a context: the server reads heron.toml's contexts again on its own.
UNREAD = (
    "A running server reads heron.toml's contexts again when the file is saved, on SIGHUP "
    "and on ops.reload; if the file defines it, /ready (checks.config.settings) says why "
    "it was not taken."
)


class ContextRefused(Exception):
    """Why a request cannot be in the context it asks for: its HTTP status and message."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


def asked_for(scope: Scope) -> str | None:
    """The context the request names: its header, else a page's ``?context=``."""
    given = dict(scope.get("headers") or []).get(_HEADER)
    if given is not None and given.strip():
        return given.decode("latin-1").strip()
    if scope.get("method") in auth.SAFE_METHODS and scope["path"] in auth.PAGES + auth.VIEWS:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        named = query.get(PAGE_PARAM, [""])[0].strip()
        return named or None
    return None


def choose(settings: Settings, asked: str | None, key: Any = None) -> str:
    """The request's context: ``asked``, or the context ``key`` is bound to, or the
    server's; ``ContextRefused`` for a bad, unknown or forbidden one."""
    bound = getattr(key, "context", None)
    if bound and asked and asked != bound:
        raise ContextRefused(
            403,
            f"This key is bound to context {bound!r} and may not act in {asked[:80]!r}: "
            f"send X-Heron-Context: {bound}, or none, or use a key of {asked[:80]!r}.",
            "permission_error",
        )
    name = asked or bound or settings.context
    try:
        check_context_name(name)
        if name != DEFAULT and name not in settings.contexts:
            settings.in_context(name)  # NotFound naming the defined ones
    except InputError as exc:
        raise ContextRefused(400, str(exc), "invalid_request_error") from None
    except HeronError as exc:  # one just added to heron.toml is read on save: say when not
        raise ContextRefused(404, f"{exc} {UNREAD}", "not_found_error") from None
    return name


class ContextMiddleware:
    """Puts each HTTP request in its context (``request.state.context``), or refuses it."""

    def __init__(self, app: ASGIApp, *, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        try:
            state["context"] = choose(self.settings, asked_for(scope), state.get("key"))
        except ContextRefused as refused:
            response = for_path(scope["path"], refused.status, refused.message, refused.kind)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def runtime_of(rt: Runtime, request: Request | None) -> Runtime:
    """The runtime of the request's context (``rt`` itself without a request, as over
    stdio, or when no ``ContextMiddleware`` chose one)."""
    if request is None:
        return rt
    return rt.within(getattr(request.state, "context", rt.context))
