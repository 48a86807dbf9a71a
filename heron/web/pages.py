"""The page routes: one shell per pane, rendered with Jinja2 (autoescape on), every
answer carrying a strict Content-Security-Policy; the package's static files, from memory.

The shells hold the forms and empty regions; the pane's script fills them through the
public APIs (``POST /rpc``, ``/chat/stream``, the event streams), never a private one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from heron.web import auth

#: No inline script or style, nothing from elsewhere, never framed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' blob:; connect-src 'self'; font-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",  # no-referrer would make form posts Origin: null
    "cross-origin-opener-policy": "same-origin",
}
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Pane:
    path: str
    name: str  # the template and the script: templates/NAME.html, static/NAME.js
    title: str


PANES = (
    Pane("/", "chat", "Chat"),
    Pane("/libraries", "libraries", "Libraries"),
    Pane("/skills", "skills", "Skills"),
    Pane("/tools", "tools", "Tools"),
    Pane("/jobs", "jobs", "Jobs"),
    Pane("/interventions", "interventions", "Interventions"),
    Pane("/operations", "operations", "Operations"),
)
assert tuple(p.path for p in PANES) == auth.PAGES  # the sign-in redirect knows each page

templates = Environment(loader=PackageLoader("heron.web", "templates"), autoescape=True)


def html(name: str, status: int = 200, **context: object) -> Response:
    body = templates.get_template(f"{name}.html").render(panes=PANES, **context)
    headers = HEADERS | {"cache-control": "no-store"}
    return HTMLResponse(body, status_code=status, headers=headers)


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


def load_assets(folder: Path = STATIC) -> dict[str, Asset]:
    """Every static file, read once: a few kilobytes, served from memory."""
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
    return {
        path.name: Asset(body, types[path.suffix], hashlib.sha256(body).hexdigest()[:16])
        for path in sorted(folder.iterdir())
        if path.suffix in types
        for body in [path.read_bytes()]
    }


ASSETS = load_assets()
#: ``{{ asset("chat.js") }}``: its URL with its hash, so it may be cached for good.
templates.globals["asset"] = lambda name: f"/static/{name}?v={ASSETS[name].etag}"


async def static(request: Request) -> Response:
    asset = ASSETS.get(request.path_params["name"])
    if asset is None:
        return Response("Not found.", 404, media_type="text/plain", headers=HEADERS)
    headers = HEADERS | {
        "etag": f'"{asset.etag}"',
        "cache-control": "public, max-age=31536000, immutable",
    }
    if request.headers.get("if-none-match") == f'"{asset.etag}"':
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def routes(token: str | None) -> list[BaseRoute]:
    """The pages, ``/signin`` and ``/static``; ``token``: the server's, or ``None``."""
    secret = token.encode() if token else None
    csrf = auth.csrf(secret) if secret else ""

    def pane(p: Pane) -> Route:
        async def page(request: Request) -> Response:
            return html(p.name, pane=p, csrf=csrf, signed_in=secret is not None)

        return Route(p.path, page, methods=["GET"], name=p.name)

    async def signin_form(request: Request) -> Response:
        if secret is None:
            return RedirectResponse("/", status_code=303)
        return html("signin", next=auth.local_next(request.query_params.get("next")))

    async def signin(request: Request) -> Response:
        if secret is None:
            return RedirectResponse("/", status_code=303)
        fields = await auth.form_fields(request)
        to = auth.local_next(fields.get("next"))
        if not auth.check(fields.get("token", ""), secret):
            return html("signin", 401, next=to, error="That is not the server's token.")
        return auth.signed_in(secret, request.url.scheme == "https", to)

    async def signout(request: Request) -> Response:
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(auth.COOKIE, path="/", httponly=True, samesite="strict")
        return response

    return [
        *(pane(p) for p in PANES),
        Route("/signin", signin_form, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/static/{name}", static, methods=["GET"]),
    ]
