"""``HostOriginMiddleware``: which names and which web pages may talk to the server, for
every route at once (``/rpc``, ``/v1``, ``/mcp``, streams, probes, pages to come).

Two attacks from a browser the user trusts are shut out here:

- **DNS rebinding.** A page at ``http://evil.example`` re-points its own name at
  127.0.0.1 and then talks to Heron as if same-origin. The browser still sends
  ``Host: evil.example``, so only Host values this server answers to pass: loopback
  names (``localhost``, ``127.0.0.1``, ``[::1]``, any port), the address it was bound to,
  the IP address a request arrived on (an address cannot be re-pointed; this is what
  makes ``--host 0.0.0.0`` usable by IP), and ``HERON_SERVER_ALLOWED_HOSTS``. Anything
  else is 421 with the setting to change. Over a Unix socket there is no name to
  rebind (a browser cannot open one), so Host is not checked there.
- **Cross-site requests.** Any page may ``fetch`` ``http://127.0.0.1:8765/rpc``; the
  browser marks it with ``Origin``. Only the server's own origin (``scheme://Host``, the
  page a future web UI is served from) and ``HERON_SERVER_ALLOWED_ORIGINS`` pass; any
  other origin, ``null`` included (sandboxed frames, ``file://``), is 403, preflights
  too, so no CORS header ever tells a browser it may read an answer. Clients that are
  not browsers send no ``Origin`` and are not affected.
- **Cross-site requests that carry no Origin.** ``<img src=http://127.0.0.1:8765/doctor>``
  sends no ``Origin``, and with no token (the loopback default) nothing else stops it.
  Browsers mark every request with Fetch Metadata: ``Sec-Fetch-Site`` says who asked.
  ``cross-site`` (and ``same-site``, which includes a page on another port of
  127.0.0.1, unless ``HERON_SERVER_ALLOW_SAME_SITE``) is 403 on every route but the
  static assets (``/static/``) and a top-level navigation (``GET`` with
  ``Sec-Fetch-Mode: navigate`` and ``Sec-Fetch-Dest: document``: following a link to
  Heron, which must still work); a page of a listed origin (its ``Origin`` passed above)
  is let through. A value no browser sends counts as ``cross-site``. Clients that are
  not browsers send no ``Sec-Fetch-Site`` and are not affected; that is why a ``GET``
  never costs anything (no model call, no program or server started, no write): a
  navigation may be anyone's.
- **Routes whose every request starts something** (``OWN_PAGES_ONLY``: ``/mcp``, where
  any request without a session, a ``GET`` included, starts an MCP server session, and
  ``/upload/``, where each writes files into a library, in a body a form of any page may
  send without a preflight). A
  browser reaches them from Heron's own pages alone: ``Sec-Fetch-Site: same-origin``, or
  a listed origin's page. A navigation, a typed address and a same-site page are
  refused, ``HERON_SERVER_ALLOW_SAME_SITE`` or not: another port of this host is
  another origin, however the browser counts sites (an ``<img>`` there loads with the
  user's sign-in cookie, ``SameSite=Strict`` included, and sends no ``Origin``). A
  ``Referer`` of another origin, port included, is refused too, for browsers that send
  no Fetch Metadata. Clients that are no browser send neither and pass.

Starlette's ``TrustedHostMiddleware`` is the model; it is not used as is because it
cuts ``[::1]:8765`` at the first colon and answers in plain text.

Allowlist entries: ``heron.lan`` (any port), ``heron.lan:8443`` (that port only),
``*.corp.example`` (its subdomains), ``*`` (any name: only behind a proxy that checks).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from heron.errors import ConfigError
from heron.server.http.replies import for_path

#: ``name[:port]`` where name is a DNS name, an IPv4 address or a bracketed IPv6 one.
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)(?::(?P<port>[0-9]{1,5}))?")
#: Binding these listens on every interface; they never appear in a Host header.
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
DEFAULT_PORTS = {"http": 80, "https": 443}
#: ``Sec-Fetch-Site`` values of requests the user made here: the page itself, or typed in.
FETCH_TRUSTED = frozenset({"same-origin", "none"})
#: The page's scripts and styles, which any request may fetch (they are public).
STATIC = "/static/"
#: Routes a browser may reach only from Heron's own pages (or a listed origin's): each
#: request there may start a server (see the module).
OWN_PAGES_ONLY = ("/mcp", "/upload")


def own_pages_only(path: str) -> bool:
    """Whether ``path`` is one of ``OWN_PAGES_ONLY`` (``/mcp`` and ``/mcp/...``)."""
    return any(path == p or path.startswith(p + "/") for p in OWN_PAGES_ONLY)


def normal_name(name: str) -> str:
    """``name`` as compared: lower case, no trailing dot, IP addresses in one spelling
    (``[::1]`` and ``0:0::1`` are both ``::1``)."""
    name = name.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(name.removeprefix("[").removesuffix("]")))
    except ValueError:
        return name


def split_host(value: str) -> tuple[str, int | None] | None:
    """``"[::1]:8765"`` -> ``("::1", 8765)``; ``None`` when it is no host at all."""
    match = _HOST.fullmatch(value.strip())
    if match is None or (match["port"] and int(match["port"]) > 65535):
        return None
    return normal_name(match["name"]), int(match["port"]) if match["port"] else None


def is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


@dataclass(frozen=True)
class HostPattern:
    """One allowlist entry: a name (``*`` or ``*.suffix`` for many) and maybe a port."""

    name: str
    port: int | None

    @classmethod
    def parse(cls, entry: str) -> HostPattern:
        text = entry.strip()
        if text == "*":
            return cls("*", None)
        wild = text.startswith("*.")
        parsed = split_host(text.removeprefix("*.") if wild else text)
        if parsed is None:
            raise ConfigError(
                f"HERON_SERVER_ALLOWED_HOSTS has {entry!r}, which is not a host. Use entries "
                'like ["heron.lan", "heron.lan:8443", "*.corp.example", "10.0.0.7"].'
            )
        name, port = parsed
        return cls(f"*.{name}" if wild else name, port)

    def matches(self, name: str, port: int | None) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.name == "*":
            return True
        if self.name.startswith("*."):
            return name.endswith(self.name[1:])
        return name == self.name


def origin_key(origin: str) -> str | None:
    """``"HTTP://Heron.lan"`` -> ``"http://heron.lan:80"``; ``None`` for ``null`` or
    anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return f"{scheme}://{normal_name(parts.hostname)}:{port or DEFAULT_PORTS[scheme]}"


def browser_origin(key: str) -> str:
    """``origin_key``'s form as a browser sends it: ``"https://app.example:443"`` ->
    ``"https://app.example"`` (for the CORS headers, which compare text)."""
    scheme, _, rest = key.partition("://")
    name, _, port = rest.rpartition(":")
    name = f"[{name}]" if ":" in name else name
    return f"{scheme}://{name}" + ("" if int(port) == DEFAULT_PORTS[scheme] else f":{port}")


@dataclass(frozen=True)
class Allowlist:
    """The Host and Origin values a server takes; ``build`` checks the settings' entries,
    so a bad one stops ``create_app`` with a ``ConfigError`` instead of failing requests."""

    bound: str | None
    hosts: tuple[HostPattern, ...]
    origins: frozenset[str]  # origin_key form
    check_host: bool = True
    same_site: bool = False  # HERON_SERVER_ALLOW_SAME_SITE: same-site pages may call

    @classmethod
    def build(
        cls,
        bound: str | None,
        hosts: Iterable[str] = (),
        origins: Iterable[str] = (),
        *,
        check_host: bool = True,
        same_site: bool = False,
    ) -> Allowlist:
        keys = set()
        for entry in origins:
            key = origin_key(entry)
            if key is None:
                raise ConfigError(
                    f"HERON_SERVER_ALLOWED_ORIGINS has {entry!r}, which is not an origin. "
                    'Use scheme://host[:port], e.g. ["https://app.example"].'
                )
            keys.add(key)
        named = None if bound is None or bound in WILDCARDS else normal_name(bound)
        patterns = tuple(HostPattern.parse(entry) for entry in hosts)
        return cls(named, patterns, frozenset(keys), check_host, same_site)

    def host_allowed(self, host: str, scope: Scope) -> bool:
        """Whether the ``Host`` header ``host`` names this server (see the module)."""
        if not self.check_host:
            return True
        parsed = split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        server = scope.get("server")
        arrived_on = normal_name(server[0]) if server else None
        return (
            is_loopback(name)
            or name in (self.bound, arrived_on)
            or any(pattern.matches(name, port) for pattern in self.hosts)
        )

    def origin_allowed(self, origin: str, host: str, scheme: str) -> bool:
        """Whether a page at ``origin`` may call: its own origin, or a listed one."""
        key = origin_key(origin)
        return key is not None and (key in self.origins or key == origin_key(f"{scheme}://{host}"))

    def referer_own(self, referer: str | None, host: str, scheme: str) -> bool:
        """Whether a ``Referer`` (none: yes) is a page of this server's origin or a
        listed one, port included: ``http://127.0.0.1:9000/x`` is not
        ``http://127.0.0.1:8765``'s."""
        if referer is None:
            return True
        try:
            parts = urlsplit(referer.strip())
            page = f"{parts.scheme}://{parts.netloc}"
        except ValueError:
            return False
        return self.origin_allowed(page, host, scheme)

    def fetch_allowed(self, scope: Scope, headers: Headers) -> bool:
        """Whether the request's Fetch Metadata lets it through (see the module)."""
        site = headers.get("sec-fetch-site")
        origin = headers.get("origin")
        listed = origin is not None and origin_key(origin) in self.origins
        if own_pages_only(scope["path"]):
            return (site is None or site == "same-origin" or listed) and self.referer_own(
                headers.get("referer"), headers.get("host", ""), scope["scheme"]
            )
        if site is None or site in FETCH_TRUSTED:
            return True
        if site == "same-site" and self.same_site:
            return True
        if listed:
            return True  # a listed origin's page, through CORS
        if scope["path"].startswith(STATIC):
            return True
        return (
            scope["method"] == "GET"
            and headers.get("sec-fetch-mode") == "navigate"
            and headers.get("sec-fetch-dest") == "document"
        )


class HostOriginMiddleware:
    """Refuse foreign ``Host`` (421) and ``Origin`` (403) values, and cross-site requests
    by their Fetch Metadata (403); see the module."""

    def __init__(self, app: ASGIApp, *, allow: Allowlist) -> None:
        self.app = app
        self.allow = allow

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host, origin = headers.get("host", ""), headers.get("origin")
        if not self.allow.host_allowed(host, scope):
            refusal = for_path(scope["path"], 421, host_message(host), "host_not_allowed")
        elif origin is not None and not self.allow.origin_allowed(origin, host, scope["scheme"]):
            refusal = for_path(scope["path"], 403, origin_message(origin), "origin_not_allowed")
        elif not self.allow.fetch_allowed(scope, headers):
            site = headers.get("sec-fetch-site", "")
            said = own_pages_message if own_pages_only(scope["path"]) else fetch_message
            refusal = for_path(scope["path"], 403, said(site), "cross_site_refused")
        else:
            await self.app(scope, receive, send)
            return
        await refusal(scope, receive, send)


def host_message(host: str) -> str:
    if not host:
        return "The request has no Host header; send one (HTTP/1.1 requires it)."
    parsed = split_host(host)
    name = parsed[0] if parsed else host
    return (
        f"Host {host!r} is not a name this server answers to, so the request was refused "
        "(this protects against DNS rebinding). If clients reach Heron by that name, list "
        f"it: HERON_SERVER_ALLOWED_HOSTS='[\"{name}\"]' (add :PORT to allow one port). "
        "Loopback names and the IP address a request arrives on are always allowed."
    )


def origin_message(origin: str) -> str:
    return (
        f"Requests from web pages at {origin!r} are refused: Heron answers only its own "
        "origin, so other sites cannot use it through the user's browser. To let that page "
        "call Heron, list it: HERON_SERVER_ALLOWED_ORIGINS='[\"https://app.example\"]'."
    )


def fetch_message(site: str) -> str:
    return (
        f"A request another site's page made (Sec-Fetch-Site: {site[:32]!r}) is refused: "
        "only Heron's own pages, links to them and clients that are not browsers may use "
        "it. To let a page of another origin call Heron, list it: "
        "HERON_SERVER_ALLOWED_ORIGINS='[\"https://app.example\"]'; a page of the same "
        "site (another port of this host): HERON_SERVER_ALLOW_SAME_SITE=true."
    )


def own_pages_message(site: str) -> str:
    return (
        f"A browser request to this route (Sec-Fetch-Site: {site[:32]!r}, or a Referer of "
        "another origin) is refused: each request here starts an MCP session, so only "
        "Heron's own pages and clients that are not browsers may send one; a page on "
        "another port of this host is another origin. To let a page of another origin call "
        "it, list it: HERON_SERVER_ALLOWED_ORIGINS='[\"https://app.example\"]'."
    )
