"""The page routes: one shell per pane, rendered with Jinja2 (autoescape on), every
answer carrying a strict Content-Security-Policy; the package's static files, from memory.

The shells hold the forms and empty regions; the pane's script fills them through the
public APIs (``POST /rpc``, ``/chat/stream``, the event streams), never a private one.
Their words come from the request's catalogue (``heron.server.web.i18n``). ``/source`` shows a
local library's page with its lines numbered, the cited ones marked: where a citation's
source link opens; ``/source/file`` a document's original file, so a PDF opens at its
cited page (``#page=N``).
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from heron.core.contexts import DEFAULT
from heron.errors import InputError
from heron.keys import PREFIX
from heron.libraries import read_libraries
from heron.server.features.keys import current_key, keyring
from heron.server.hooks import NO_METHODS, no_lifespan
from heron.server.http import auth
from heron.server.http.contexts import PAGE_PARAM, runtime_of
from heron.server.runtime import Runtime
from heron.server.web import i18n, source

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
    name: str  # the template, the script (static/NAME.js) and the title (pane.NAME)


PANES = (
    Pane("/", "chat"),
    Pane("/libraries", "libraries"),
    Pane("/skills", "skills"),
    Pane("/tools", "tools"),
    Pane("/jobs", "jobs"),
    Pane("/interventions", "interventions"),
    Pane("/operations", "operations"),
)
assert tuple(p.path for p in PANES) == auth.PAGES  # the sign-in redirect knows each page

templates = Environment(loader=PackageLoader("heron.server.web", "templates"), autoescape=True)


def html(request: Request, name: str, status: int = 200, **context: object) -> Response:
    """The template ``name`` in the request's language and context: the page's script
    sends ``X-Heron-Context`` with the context it was opened in, and its links keep it."""
    lang = i18n.language(request)
    # The sign-in form comes before any context is chosen (ContextMiddleware).
    chosen = getattr(request.state, "context", DEFAULT)
    query = "" if chosen == DEFAULT else "?" + urlencode({PAGE_PARAM: chosen})
    body = templates.get_template(f"{name}.html").render(
        panes=PANES,
        lang=lang,
        t=i18n.Messages(lang),
        languages=i18n.LANGUAGES,
        context=chosen,
        context_query=query,
        **context,
    )
    # The page differs by cookie and Accept-Language; it is never stored anyway.
    headers = HEADERS | {"cache-control": "no-store", "vary": "accept-language, cookie"}
    return HTMLResponse(body, status_code=status, headers=headers)


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


def asset(body: bytes, media_type: str) -> Asset:
    return Asset(body, media_type, hashlib.sha256(body).hexdigest()[:16])


def load_assets(folder: Path = STATIC) -> dict[str, Asset]:
    """Every static file, read once, and each catalogue as ``messages.<language>.js``: a
    few kilobytes, served from memory."""
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
    found = {
        path.name: asset(path.read_bytes(), types[path.suffix])
        for path in sorted(folder.iterdir())
        if path.suffix in types
    }
    for code in i18n.LANGUAGES:
        found[f"messages.{code}.js"] = asset(i18n.script(code), types[".js"])
    return found


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


@dataclass(frozen=True)
class Pages:
    """The page's handlers on one server: its runtime, and the guard that signs in and
    out with its token (none: the pages are open, and offer no sign-out)."""

    rt: Runtime
    guard: auth.Guard

    @property
    def locked(self) -> bool:
        return self.guard.token is not None

    async def pane(self, p: Pane, request: Request) -> Response:
        # The room the chat's conversations are shared in: its cards and jobs show in the
        # conversation (the context's interventions_room).
        room = runtime_of(self.rt, request).settings.interventions.room
        # A person signed in with a named key joins the room's roster from the page.
        key = current_key()
        person = key.name if key is not None else ""
        csrf = self.guard.page_csrf(request.scope)
        return html(
            request, p.name, pane=p, csrf=csrf, signed_in=self.locked, room=room, person=person
        )

    def source_html(self, request: Request, status: int, found: source.Found) -> Response:
        """The ``source`` template showing ``found`` (a page's lines, or why there are none)."""
        csrf = self.guard.page_csrf(request.scope)
        return html(request, "source", status, csrf=csrf, signed_in=self.locked, pane=None,
                    found=found)  # fmt: skip

    async def source_page(self, request: Request) -> Response:
        scoped = runtime_of(self.rt, request)
        seen = {lib.name for lib in read_libraries(scoped.settings)}
        found = await run_in_threadpool(source.lookup, scoped.store, request, seen, scoped.settings)
        return self.source_html(request, 200 if found.lines else 404, found)

    async def source_file(self, request: Request) -> Response:
        scoped = runtime_of(self.rt, request)
        seen = {lib.name for lib in read_libraries(scoped.settings)}
        served = await run_in_threadpool(
            source.original, scoped.store, request, seen, scoped.settings
        )
        if served is None:
            found = source.Found(request.query_params.get("library", ""), "", problem="source.none")
            return self.source_html(request, 404, found)
        document, media, headers = served
        return Response(document.data, media_type=media, headers=headers)

    async def signin_form(self, request: Request) -> Response:
        if not self.locked:
            return RedirectResponse("/", status_code=303)
        next_ = auth.local_next(request.query_params.get("next"))
        return html(request, "signin", pane=None, next=next_)

    async def signin(self, request: Request) -> Response:
        if not self.locked:
            return RedirectResponse("/", status_code=303)
        client = auth.client_of(request.scope)
        wait = await self.guard.throttle.retry_after(client)
        if wait:
            page = html(request, "signin", 429, pane=None, next="/", error="signin.throttled")
            page.headers["retry-after"] = str(wait)
            return page
        try:
            fields = await auth.form_fields(request)
        except InputError:
            return html(request, "signin", 400, pane=None, next="/", error="signin.bad_form")
        to = auth.local_next(fields.get("next"))
        given = fields.get("token", "").strip()
        person = await self.person_of(given)
        if person is None and not self.guard.token_ok(given):
            await self.guard.throttle.failed(client)
            return html(request, "signin", 401, pane=None, next=to, error="signin.wrong")
        return auth.signed_in(self.guard.sessions.new(person), request.url.scheme == "https", to)

    async def person_of(self, given: str) -> str | None:
        """The name of the person whose own key ``given`` is (the page then acts as that
        key), or ``None``: not a key, or no key of the keyring."""
        if not given.startswith(PREFIX):
            return None
        with suppress(LookupError):
            return (await run_in_threadpool(keyring(self.rt).identify, given)).name
        return None

    async def signout(self, request: Request) -> Response:
        self.guard.sessions.revoke(auth.cookie_of(request.scope))
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(auth.COOKIE, path="/", httponly=True, samesite="strict")
        return response


def routes(rt: Runtime) -> list[BaseRoute]:
    """The pages, ``/signin`` and ``/static``, behind the server's token, if it has one."""
    pages = Pages(rt, auth.guard(rt))
    return [
        *(Route(p.path, partial(pages.pane, p), methods=["GET"], name=p.name) for p in PANES),
        Route("/source", pages.source_page, methods=["GET"]),
        Route("/source/file", pages.source_file, methods=["GET"]),
        Route("/signin", pages.signin_form, methods=["GET"]),
        Route("/signin", pages.signin, methods=["POST"]),
        Route("/signout", pages.signout, methods=["POST"]),
        Route("/static/{name}", static, methods=["GET"]),
    ]


rpc = NO_METHODS
lifespan = no_lifespan
