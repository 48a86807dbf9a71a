"""The server's token (``HERON_API_TOKEN``, ``api_token``), and signing in to the web page
with it; ``heron.server.middleware.TokenMiddleware`` applies both on every route.

The sign-in form posts the token; when it matches (compared in constant time) the
answer sets it as an ``HttpOnly; SameSite=Strict`` cookie, which the page's scripts
cannot read and no other site's request carries. The cookie alone authorises only
``GET``/``HEAD`` (pages, static files, event streams); any other method also needs the
``X-Heron-CSRF`` header holding ``csrf(token)``, which the page reads from its own
``<meta name="heron-csrf">``. A cross-site page can neither read that value nor send a
custom header without a CORS preflight, which the Origin check refuses.
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import Scope

from heron.settings import Settings

COOKIE = "heron_token"
CSRF_HEADER = b"x-heron-csrf"
#: Paths anyone may fetch: signing in and out, and the page's own scripts and styles.
OPEN = ("/signin", "/signout")
STATIC = "/static/"
#: The pages; asked for without a token they send the browser to the sign-in form.
PAGES = ("/", "/libraries", "/skills", "/tools", "/jobs", "/interventions", "/operations")
#: Pages that are no pane: a cited source (``/source``), opened from a passage.
VIEWS = ("/source",)
SAFE_METHODS = frozenset({"GET", "HEAD"})


def api_token(settings: Settings) -> str | None:
    """The bearer token, ``None`` when unset or blank (a blank one must not pass as set)."""
    secret = settings.api_token
    return (secret.get_secret_value().strip() or None) if secret else None


def csrf(token: bytes) -> str:
    """The CSRF value for ``token``: derived, so the server keeps no session state."""
    return hmac.new(token, b"heron-web-csrf", "sha256").hexdigest()


def is_open(path: str) -> bool:
    return path in OPEN or path.startswith(STATIC)


def cookie_of(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no token
                return None
            if COOKIE in jar:
                return jar[COOKIE].value.encode("latin-1")
    return None


def cookie_authorized(scope: Scope, token: bytes) -> bool:
    """The sign-in cookie holds ``token``, and an unsafe method carries the CSRF header."""
    given = cookie_of(scope)
    if given is None or not hmac.compare_digest(given, token):
        return False
    if scope["method"] in SAFE_METHODS:
        return True
    header = dict(scope["headers"]).get(CSRF_HEADER, b"")
    return hmac.compare_digest(header, csrf(token).encode())


def refusal(scope: Scope) -> Response | None:
    """For a page asked for without the token: a redirect to the sign-in form."""
    if scope["method"] in SAFE_METHODS and scope["path"] in PAGES + VIEWS:
        return RedirectResponse(f"/signin?next={quote(scope['path'])}", status_code=303)
    return None


def local_next(value: str | None) -> str:
    """Where to go after signing in: one of the pages, never another site."""
    return value if value in PAGES else "/"


def signed_in(token: bytes, secure: bool, to: str) -> Response:
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(
        COOKIE, token.decode("latin-1"), httponly=True, samesite="strict", secure=secure, path="/"
    )
    return response


async def form_fields(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (the body is bounded by ``BodyMiddleware``)."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, max_num_fields=8).items()}


def check(given: str, token: bytes) -> bool:
    return hmac.compare_digest(given.strip().encode("utf-8"), token)
