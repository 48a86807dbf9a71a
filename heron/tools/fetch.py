"""``fetch_url``: a web page's readable text as Markdown, with its title and final URL.

What is fetched, and how:

- ``http`` and ``https`` only, ``GET``; redirects followed up to
  ``tools_fetch_max_redirects``, each hop's address checked like the first;
- addresses outside the public internet are refused: loopback, private (RFC 1918, IPv6
  ULA ``fc00::/7``), link-local (``169.254.0.0/16`` with the cloud metadata address
  ``169.254.169.254``, ``fe80::/10``), CGNAT ``100.64.0.0/10``, unspecified, multicast,
  reserved and documentation ranges, and an IPv6 address that carries one of those as an
  IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4, Teredo).
  ``tools_fetch_allowed_networks`` (CIDR) lets some through (an intranet, the tests'
  loopback server);
- the name is resolved once, every address it resolves to is checked (one refused
  address refuses the name: a public name with a private address is how rebinding
  starts), and the connection is made to the address that was checked, never resolved
  again (``_CheckedNetwork``, httpcore's network backend: the check and the connect are
  one step, so no DNS answer can change in between; TLS still verifies the name);
- the body is read up to ``tools_fetch_max_bytes`` (the rest is not read) and the whole
  call, redirects, reading, rendering and extracting included, takes at most
  ``tools_fetch_timeout`` seconds; no proxy from the environment, no cookies, no
  credentials sent;
- HTML goes through trafilatura (the maintained extractor of the main text: boilerplate,
  menus and footers dropped), as Markdown with links, in a process of its own
  (``heron.tools.extraction``): ``MAX_PARSE`` bytes of HTML at most, an address-space
  limit, killed at the call's deadline; plain text and JSON come back as they are;
  anything else is refused with its type.

``render: true`` loads the page in Debian's Chromium (through Playwright; ``pip install
'heron[web]'``) for pages that build their text with JavaScript: Chromium starts with no
network of its own, in its own empty network and PID namespaces through bubblewrap
(rendering is refused without it: a page's WebRTC reached loopback without it), every
name resolving to nothing and every connection going to a proxy that does not exist, and
every request the page makes is fetched here, through the same checks and limits, and
handed to it. Non-GET requests and WebSockets are refused. At the deadline the whole
browser is killed (a page that loops after loading held ``page.content()`` forever).

Safety ``read`` (it changes nothing) with network use declared (the ``network`` tag);
offered only when ``tools_fetch_url`` is on.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import httpcore

from heron.core.errors import ToolCallError, ToolInputError
from heron.core.tools import Handler, Tool, argument, object_schema
from heron.extras import missing
from heron.settings import Settings, ToolsSettings
from heron.tools import extraction

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Route

NETWORK = "network"
USER_AGENT = "Heron-fetch_url/1 (+https://github.com/tryaii/heron)"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Markdown returned at most, characters (a model's context is the limit, not the page).
MAX_TEXT = 100_000
#: Requests one rendered page may make (scripts, styles, data), at most.
MAX_SUBREQUESTS = 60
#: Seconds (a quarter of the timeout at most) a rendered page that never goes idle leaves
#: for reading its DOM and extracting its text before the deadline.
READING = 3.0
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class Refused(ToolCallError):
    """An address ``fetch_url`` will not connect to; raised before any connection."""


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int
    timeout: float
    max_redirects: int
    allowed: tuple[IPNetwork, ...] = ()

    @classmethod
    def of(cls, tools: ToolsSettings) -> FetchLimits:
        return cls(
            tools.fetch_max_bytes,
            tools.fetch_timeout,
            tools.fetch_max_redirects,
            allowed_networks(tools.fetch_allowed_networks),
        )


def allowed_networks(cidrs: Iterable[str]) -> tuple[IPNetwork, ...]:
    networks = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            raise ToolInputError(
                f"HERON_TOOLS_FETCH_ALLOWED_NETWORKS: {cidr!r} is no network; write CIDR "
                'blocks, e.g. ["10.1.0.0/16", "127.0.0.1/32"].'
            ) from None
    return tuple(networks)


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is outside the public internet (``None``: it is public)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if address.teredo:
            embedded = address.teredo[1]
        if address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            inner = refusal(embedded)
            return f"it carries {embedded}, {inner}" if inner else None
    for test, what in (
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address (the cloud metadata service lives there)"),
        ("is_unspecified", "the unspecified address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
    ):
        if getattr(address, test):
            return what
    if not address.is_global:  # CGNAT 100.64.0.0/10 and the IETF special ranges
        return "not a public internet address"
    return None


def check_address(address: IPAddress, allowed: Iterable[IPNetwork] = ()) -> None:
    """``Refused`` unless ``address`` is public or in one of the ``allowed`` networks."""
    if any(address.version == net.version and address in net for net in allowed):
        return
    why = refusal(address)
    if why is not None:
        raise Refused(
            f"fetch_url refuses {address}: {why}. Only the public internet is fetched; an "
            "operator can allow a network with HERON_TOOLS_FETCH_ALLOWED_NETWORKS."
        )


def resolve(host: str, port: int, allowed: Iterable[IPNetwork] = ()) -> list[IPAddress]:
    """Every address ``host`` resolves to, each checked (``Refused`` if one is not
    allowed); resolved once, here."""
    literal = host.strip("[]")
    try:
        return _checked([ipaddress.ip_address(literal)], allowed)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ToolCallError(f"fetch_url: cannot resolve {host!r} ({exc}).") from None
    found = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
    return _checked(found, allowed)


def _checked(addresses: list[IPAddress], allowed: Iterable[IPNetwork]) -> list[IPAddress]:
    allowed = tuple(allowed)
    for address in addresses:
        check_address(address, allowed)
    return addresses


class _CheckedNetwork(httpcore.SyncBackend):
    """httpcore's socket backend, connecting only to addresses that passed the check:
    the name is resolved and checked here and the socket opened to that address, in one
    step (no second lookup a rebinding DNS server could answer differently)."""

    def __init__(self, allowed: tuple[IPNetwork, ...]) -> None:
        self.allowed = allowed

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = resolve(host, port, self.allowed)
        error: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"no address for {host}")


@dataclass
class Fetched:
    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool
    redirects: list[str]


def check_url(url: str) -> tuple[str, int]:
    """The host and port of an ``http(s)`` URL; ``ToolInputError`` for anything else."""
    if not isinstance(url, str) or not url.strip():
        raise ToolInputError("fetch_url: give the page's address in 'url'.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ToolInputError(f"fetch_url: {url!r:.200} is not a valid URL ({exc}).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolInputError(
            f"fetch_url: {url!r:.200} is not an http(s) URL; give one such as "
            "https://example.com/page."
        )
    if parts.username or parts.password:
        raise ToolInputError("fetch_url: a URL with a user name or password is not fetched.")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


class Fetcher:
    """One ``fetch_url`` call's connections: every hop through ``_CheckedNetwork``,
    within one deadline. Close it (a ``with`` block) to close the connections."""

    def __init__(self, limits: FetchLimits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.timeout
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(),
            network_backend=_CheckedNetwork(limits.allowed),
            max_connections=6,
            retries=0,
        )

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.close()

    def _left(self, url: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ToolCallError(
                f"fetch_url: {url:.200} took over {self.limits.timeout:g} s; stopped."
            )
        return left

    def get(self, url: str, *, follow: bool = True, accept: str = "*/*") -> Fetched:
        """``url``'s response, redirects followed (each hop checked), body capped."""
        redirects: list[str] = []
        while True:
            check_url(url)
            left = self._left(url)
            headers = [
                (b"Host", urlsplit(url).netloc.encode("idna")),
                (b"User-Agent", USER_AGENT.encode()),
                (b"Accept", accept.encode()),
                (b"Accept-Encoding", b"identity"),
            ]
            timeout = {"connect": left, "read": left, "write": left, "pool": left}
            try:
                with self._pool.stream(
                    "GET", url, headers=headers, extensions={"timeout": timeout}
                ) as response:
                    location = _header(response.headers, b"location")
                    if follow and response.status in REDIRECTS and location:
                        if len(redirects) >= self.limits.max_redirects:
                            raise ToolCallError(
                                f"fetch_url: more than {self.limits.max_redirects} "
                                f"redirects from {redirects[0] if redirects else url:.200}."
                            )
                        redirects.append(url)
                        url = urljoin(url, location)
                        continue
                    body, truncated = self._read(url, response)
                    kind = _header(response.headers, b"content-type") or ""
                    return Fetched(
                        url,
                        response.status,
                        kind.split(";")[0].strip().lower(),
                        _charset(kind),
                        body,
                        truncated,
                        redirects,
                    )
            except httpcore.TimeoutException:
                raise ToolCallError(
                    f"fetch_url: {url:.200} took over {self.limits.timeout:g} s; stopped."
                ) from None
            except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
                raise ToolCallError(f"fetch_url: cannot fetch {url:.200}: {exc}.") from None
            except httpcore.UnsupportedProtocol as exc:
                raise ToolInputError(f"fetch_url: {exc}.") from None

    def _read(self, url: str, response: httpcore.Response) -> tuple[bytes, bool]:
        body = bytearray()
        limit = self.limits.max_bytes
        for chunk in response.iter_stream():
            body += chunk
            if len(body) > limit:
                return bytes(body[:limit]), True
            self._left(url)  # a page that trickles in is stopped at the deadline too
        return bytes(body), False


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _charset(content_type: str) -> str | None:
    found = re.search(r"charset=\"?([\w.:-]+)", content_type, re.IGNORECASE)
    return found.group(1) if found else None


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", "replace")


def extract(html: str, url: str, deadline: float, timeout: float) -> tuple[str, str, bool]:
    """The readable text of ``html`` as Markdown, its title and whether the HTML was cut
    to ``extraction.MAX_PARSE``, from a child process killed at ``deadline`` (a
    ``time.monotonic()`` value; ``timeout`` is only for the message)."""
    if importlib.util.find_spec("trafilatura") is None:
        raise ToolCallError(missing("web"))
    data = html.encode("utf-8", "replace")
    cut = len(data) > extraction.MAX_PARSE
    stopped = (
        f"fetch_url: {url:.200} took over {timeout:g} s (its text was still being "
        "extracted); stopped. A shorter page, or a longer HERON_TOOLS_FETCH_TIMEOUT."
    )
    left = deadline - time.monotonic()
    if left <= 0:
        raise ToolCallError(stopped)
    # None of Heron's variables (keys, tokens); Windows' Python needs SYSTEMROOT to start.
    env = {"PATH": os.defpath, "LANG": "C.UTF-8"}
    env |= {name: os.environ[name] for name in ("SYSTEMROOT",) if name in os.environ}
    child = subprocess.Popen(
        [sys.executable, "-I", extraction.__file__, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        out, err = child.communicate(data[: extraction.MAX_PARSE], timeout=left)
    except subprocess.TimeoutExpired:
        raise ToolCallError(stopped) from None
    finally:
        child.kill()  # it starts nothing of its own: the one process is all there is
        child.wait()
    if child.returncode == extraction.NO_EXTRACTOR:
        raise ToolCallError(missing("web"))
    if child.returncode == extraction.NO_MEMORY:
        raise ToolCallError(
            f"fetch_url: extracting the text of {url:.200} took more than "
            f"{extraction.MEMORY >> 20} MiB; stopped. The page is too large to read."
        )
    if child.returncode != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise ToolCallError(
            f"fetch_url: could not extract the text of {url:.200} "
            f"(exit status {child.returncode}: {last[0]:.300})."
        )
    found = json.loads(out)
    return found["markdown"], found["title"], cut


def page(
    fetched: Fetched, deadline: float, timeout: float, html: str | None = None
) -> dict[str, Any]:
    """What the tool returns for ``fetched`` (``html``: the rendered page's, if any), its
    text extracted by ``deadline``."""
    kind = fetched.content_type
    cut = False
    if html is None and kind not in ("text/html", "application/xhtml+xml"):
        if kind.startswith("text/") or kind in ("application/json", "application/xml", ""):
            text, title = _decode(fetched.body, fetched.charset), ""
        else:
            raise ToolCallError(
                f"fetch_url: {fetched.url:.200} is {kind}, not a page of text; it is not read."
            )
    else:
        source = html if html is not None else _decode(fetched.body, fetched.charset)
        text, title, cut = extract(source, fetched.url, deadline, timeout)
    cut = cut or len(text) > MAX_TEXT
    return {
        "url": fetched.url,
        "status": fetched.status,
        "title": title,
        "markdown": text[:MAX_TEXT],
        "content_type": kind,
        "bytes": len(fetched.body),
        "truncated": fetched.truncated or cut,
        "redirects": fetched.redirects,
        "rendered": html is not None,
    }


def fetch_url(url: str, limits: FetchLimits) -> dict[str, Any]:
    with Fetcher(limits) as fetcher:
        fetched = fetcher.get(url.strip(), accept="text/html,application/xhtml+xml,*/*;q=0.8")
    return page(fetched, fetcher.deadline, limits.timeout)


# -- rendering through Chromium ----------------------------------------------------------


def render_url(url: str, limits: FetchLimits, chromium: str) -> dict[str, Any]:
    """``url`` as Chromium renders it, every request it makes fetched by a ``Fetcher``;
    the browser killed at the call's deadline, whatever the page is doing."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise ToolCallError(missing("web")) from None
    program = shutil.which(chromium)
    if program is None:
        raise ToolCallError(
            f"fetch_url: no browser {chromium!r} to render with: sudo apt-get install "
            "chromium, or set HERON_TOOLS_FETCH_CHROMIUM."
        )
    sandbox = _sandbox()
    with Fetcher(limits) as fetcher, tempfile.TemporaryDirectory() as scratch:
        first = fetcher.get(url.strip(), accept="text/html,*/*;q=0.8")
        serve = _served_by(fetcher, first)
        browser_pid = Path(scratch) / "browser.pid"
        executable, args = _offline(program, sandbox, Path(scratch), browser_pid)
        with sync_playwright() as driver, _Killer(browser_pid) as killer:
            killer.at(fetcher.deadline)
            try:
                left = max(fetcher.deadline - time.monotonic(), 0.1)
                browser = driver.chromium.launch(
                    executable_path=executable, args=args, timeout=left * 1000
                )
            except PlaywrightError as exc:
                if killer.fired:
                    raise ToolCallError(_stopped(url, limits.timeout)) from None
                raise ToolCallError(f"fetch_url: Chromium did not start: {exc}.") from None
            html = _rendered(browser, first.url, serve, killer, fetcher.deadline, url, limits)
        return page(first, fetcher.deadline, limits.timeout, html)


def _stopped(url: str, timeout: float) -> str:
    """The error of a page the browser was stopped on at the deadline."""
    return (
        f"fetch_url: {url:.200} took over {timeout:g} s (the page was still "
        "loading or running in the browser); stopped."
    )


def _served_by(fetcher: Fetcher, first: Fetched) -> Callable[[Route], None]:
    """The browser's router: the page as ``first`` was fetched, then at most
    ``MAX_SUBREQUESTS`` GETs, each fetched by ``fetcher`` (every hop checked); any other
    request blocked."""
    requests = 0

    def serve(route: Route) -> None:
        nonlocal requests
        request = route.request
        if request.url == first.url:
            route.fulfill(status=first.status, headers=_served(first), body=first.body)
            return
        requests += 1
        if request.method != "GET" or requests > MAX_SUBREQUESTS:
            route.abort("blockedbyclient")
            return
        try:
            got = fetcher.get(request.url)  # each hop checked
        except (ToolCallError, ToolInputError):
            route.abort("blockedbyclient")
            return
        route.fulfill(status=got.status, headers=_served(got), body=got.body)

    return serve


def _rendered(
    browser: Browser,
    address: str,
    serve: Callable[[Route], None],
    killer: _Killer,
    deadline: float,
    url: str,
    limits: FetchLimits,
) -> str:
    """The HTML of ``address`` once ``browser`` loaded it (its requests through
    ``serve``), as it stands a little before ``deadline``; the browser closed after."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        context = browser.new_context(
            service_workers="block", java_script_enabled=True, accept_downloads=False
        )
        context.route("**/*", serve)
        tab = context.new_page()
        left = max(deadline - time.monotonic(), 0.1)
        tab.goto(address, wait_until="load", timeout=left * 1000)
        # A page that keeps polling never idles: what it shows by then is read,
        # early enough to read it and extract its text by the deadline.
        with contextlib.suppress(PlaywrightError):
            settled = deadline - min(READING, limits.timeout / 4)
            left = max(settled - time.monotonic(), 0.1)
            tab.wait_for_load_state("networkidle", timeout=left * 1000)
        # No timeout of its own: a page whose script never yields holds it until
        # the killer ends the browser at the deadline.
        return tab.content()
    except PlaywrightError as exc:
        if killer.fired or time.monotonic() >= deadline:
            raise ToolCallError(_stopped(url, limits.timeout)) from None
        raise ToolCallError(f"fetch_url: Chromium could not render {url:.200}: {exc}.") from None
    finally:
        killer.now()  # the browser never outlives the call
        with contextlib.suppress(PlaywrightError):
            browser.close()


class _Killer:
    """Kills the browser, bubblewrap and everything in its PID namespace, at a deadline
    (``at``) or at once (``now``). The browser's PID is read from the file the wrapper
    writes before it becomes bubblewrap, and held as a pidfd: the signal cannot reach
    another process that got the same number later."""

    def __init__(self, pid_file: Path) -> None:
        self.pid_file = pid_file
        self.fired = False
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._pidfd: int | None = None

    def __enter__(self) -> _Killer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.now()
        if self._timer is not None:
            self._timer.cancel()

    def at(self, deadline: float) -> None:
        self._timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        self.now()

    def now(self) -> None:
        with self._lock:
            if self._pidfd is None:
                try:
                    pid = int(self.pid_file.read_text())
                    self._pidfd = os.pidfd_open(pid)
                except (OSError, ValueError):
                    return  # not started yet (launch is then stopped by its own timeout)
            with contextlib.suppress(OSError):
                # bubblewrap's --die-with-parent takes its PID namespace with it: every
                # process Chromium started, whatever group or session it made.
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)


def _served(fetched: Fetched) -> dict[str, str]:
    kind = fetched.content_type or "application/octet-stream"
    return {"content-type": f"{kind}; charset={fetched.charset}" if fetched.charset else kind}


@functools.cache
def _works(bwrap: str) -> str | None:
    """Why ``bwrap`` cannot give a program network and PID namespaces of its own here
    (say, unprivileged user namespaces turned off), or ``None``: it can."""
    try:
        done = subprocess.run(
            [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--unshare-pid", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}"
    return None


def _sandbox() -> str:
    """The ``bwrap`` that keeps Chromium off the network, checked to work; rendering is
    refused without one (``ToolCallError`` naming the fix)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise ToolCallError(
            "fetch_url: rendering runs Chromium with no network of its own, in a namespace "
            "bubblewrap makes, and bwrap is not installed: sudo apt-get install bubblewrap "
            "(scripts/setup installs it), or fetch without render."
        )
    why = _works(bwrap)
    if why is not None:
        raise ToolCallError(
            f"fetch_url: rendering runs Chromium in a network namespace of its own, and "
            f"bubblewrap cannot make one here ({why}). Allow unprivileged user namespaces "
            "(on Ubuntu: an AppArmor profile for bwrap), or fetch without render."
        )
    return bwrap


def _offline(program: str, bwrap: str, scratch: Path, pid_file: Path) -> tuple[str, list[str]]:
    """Chromium with no network of its own: started through ``bwrap --unshare-net
    --unshare-pid``, its PID written to ``pid_file`` first (``_Killer``); besides, every
    name resolves to nothing and every connection goes to a proxy that cannot be reached
    (the requests Playwright hands back are all this page gets). The namespace is what
    holds: WebRTC's STUN goes around the proxy, to loopback, without it."""
    args = [
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://0.0.0.0:1",
        "--proxy-bypass-list=<-loopback>",
        "--disable-background-networking",
        "--no-pings",
    ]
    wrapper = scratch / "chromium-offline"
    command = shlex.join(
        [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent"]
    )
    wrapper.write_text(
        f"#!/bin/sh\necho $$ > {shlex.quote(str(pid_file))}\n"
        f'exec {command} -- {shlex.quote(program)} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o700)
    return str(wrapper), args


def fetch_tool(settings: Settings) -> tuple[Tool, Handler]:
    limits = FetchLimits.of(settings.tools)

    def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        url = argument(arguments, "url")
        check_url(url)
        render = arguments.get("render", False)
        if not isinstance(render, bool):
            raise ToolInputError("fetch_url: 'render' must be true or false.")
        if render:
            return render_url(url, limits, settings.tools.fetch_chromium)
        return fetch_url(url, limits)

    return (
        Tool(
            "fetch_url",
            "Fetch a web page and return its readable text as Markdown, with its title and "
            "final URL (after redirects). Public web pages only.",
            object_schema(
                ["url"],
                url=("string", "the page's http or https address"),
                render=(
                    "boolean",
                    "load it in a browser first, for pages that need JavaScript (slower)",
                ),
            ),
            safety="read",
            tags=("web", NETWORK),
        ),
        handler,
    )
