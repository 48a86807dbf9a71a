"""fetch_url against a loopback test server (redirects, a large page, a slow page, one that
trickles) and every address class outside the public internet, each refused **before**
any connection: a listening socket on every address of this machine must see none, and
no socket is opened to the others (``socket.create_connection`` watched, not replaced).

The loopback server is allowed through ``tools_fetch_allowed_networks``, as an operator
would allow an intranet; without it loopback is refused like the rest."""

from __future__ import annotations

import contextlib
import http.server
import ipaddress
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.core.errors import ToolCallError, ToolInputError
from heron.errors import ConfigError
from heron.settings import Settings
from heron.tools import ToolRegistry
from heron.tools.fetch import fetch_tool, refusal
from tests.ci import missing

ARTICLE = (
    "<html><head><title>Tomatoes &amp; water</title></head><body>"
    "<nav><a href='/'>Home</a> | <a href='/shop'>Shop</a></nav>"
    "<article><h1>Watering tomatoes</h1>"
    "<p>Water tomato plants deeply twice a week, at the base, early in the morning, "
    "and never wet the leaves: it spreads blight through the whole bed.</p>"
    "<p>In a heat wave water them every day; read <a href='/more'>more</a>.</p>"
    "</article><footer>Copyright 2031 the garden club</footer></body></html>"
)
SCRIPTED = (
    "<html><head><title>Scripted</title></head><body><article><h1>Scripted</h1>"
    "<p id='text'>Loading...</p></article><script src='/app.js'></script>"
    "<img src='http://0.0.0.0:{port}/pixel.gif'></body></html>"
)
APP_JS = (
    "document.getElementById('text').textContent = 'This paragraph was written by the "
    "page script after it loaded, as single-page applications write theirs.';"
)
BIG = 1 << 20
MAX_BYTES = 64 << 10
#: Issue 45: 1.6 MB of two-letter paragraphs, cheap to send and dear to extract.
PARAGRAPHS = b"<html><head><title>Short</title></head><body>" + b"<p>ab</p>" * 180_000
#: A page whose script never yields once it has loaded.
LOOPING = (
    "<html><head><title>Busy</title></head><body><article><h1>Busy</h1><p>This page "
    "starts a loop that never ends once it has loaded, and holds its main thread.</p>"
    "</article><script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 50));"
    "</script></body></html>"
)
#: A page that never goes idle: it asks for more every 100 ms.
POLLING = (
    "<html><head><title>Live</title></head><body><article><p id='t'>Loading</p></article>"
    "<script>document.getElementById('t').textContent = 'This paragraph was written by the "
    "page script, which then asks the server for news every tenth of a second.';"
    "setInterval(() => fetch('/app.js'), 100);</script></body></html>"
)
#: A page whose script sends WebRTC's STUN and TURN requests to loopback (``{udp}`` and
#: ``{tcp}``: the ports of the test's sockets).
WEBRTC = (
    "<html><head><title>Call</title></head><body><article><p id='t'>Loading</p></article>"
    "<script>const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{udp}'}},"
    " {{urls: 'turn:127.0.0.1:{tcp}?transport=tcp', username: 'u', credential: 'p'}}]}});"
    "pc.createDataChannel('x'); pc.createOffer().then(o => pc.setLocalDescription(o));"
    "document.getElementById('t').textContent = 'This paragraph was written by the page "
    "script after it opened a peer connection to this machine.';</script></body></html>"
)


class Site(http.server.BaseHTTPRequestHandler):
    listener_port = 0
    udp_port = 0
    tcp_port = 0

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, body: bytes, kind: str = "text/html; charset=utf-8") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, where: str, status: int = 302) -> None:
        self.send_response(status)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        path = self.path
        if path == "/start":
            self._redirect("/hop", 301)
        elif path == "/hop":
            self._redirect(f"http://localhost:{self.server.server_address[1]}/article", 307)
        elif path == "/article":
            self._send(ARTICLE.encode())
        elif path == "/loop":
            self._redirect("/loop")
        elif path == "/escape":  # a hop to an address the first one does not allow
            self._redirect(f"http://0.0.0.0:{self.listener_port}/")
        elif path == "/big":
            self._send(b"<html><body><p>" + b"x" * BIG + b"</p></body></html>")
        elif path == "/slow":
            time.sleep(3)
            self._send(ARTICLE.encode())
        elif path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(60):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
        elif path == "/binary":
            self._send(b"\x89PNG\r\n", "image/png")
        elif path == "/scripted":
            self._send(SCRIPTED.format(port=self.listener_port).encode())
        elif path == "/app.js":
            self._send(APP_JS.encode(), "text/javascript")
        elif path == "/paragraphs":
            self._send(PARAGRAPHS)
        elif path == "/looping":
            self._send(LOOPING.encode())
        elif path == "/polling":
            self._send(POLLING.encode())
        elif path == "/webrtc":
            self._send(WEBRTC.format(udp=self.udp_port, tcp=self.tcp_port).encode())
        else:
            self.send_error(404)


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    """A socket listening on every address of this machine (IPv4 and IPv6): whatever
    reaches it is a connection fetch_url should not have made."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(("::", 0))
    sock.listen(16)
    sock.setblocking(False)
    yield sock
    sock.close()


@pytest.fixture(scope="module")
def site(listener: socket.socket) -> Iterator[str]:
    Site.listener_port = listener.getsockname()[1]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _fetcher(**settings: Any) -> Callable[..., Any]:
    registry = ToolRegistry()
    tools = {"fetch_url": True} | settings.pop("tools", {})
    registry.add(*fetch_tool(Settings(tools=tools, **settings)))
    return lambda url, **more: registry.call("fetch_url", {"url": url, **more})


@pytest.fixture
def fetch(home: object) -> Callable[..., Any]:
    """fetch_url with the loopback test server allowed, 64 KiB and 2 s at most (the
    extracting child alone starts in 0.5 s, more on a loaded CI machine)."""
    return _fetcher(
        tools={
            "fetch_allowed_networks": ["127.0.0.0/8"],
            "fetch_max_bytes": MAX_BYTES,
            "fetch_timeout": 2.0,
            "fetch_max_redirects": 3,
        },
    )


@pytest.fixture
def strict(home: object) -> Callable[..., Any]:
    """fetch_url as shipped: the public internet only."""
    return _fetcher()


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every ``socket.create_connection`` made (the real one still runs)."""
    made: list[tuple[Any, ...]] = []
    real = socket.create_connection

    def watched(address: tuple[Any, ...], *args: Any, **kwargs: Any) -> socket.socket:
        made.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", watched)
    return made


def _no_connection(listener: socket.socket) -> None:
    readable, _, _ = select.select([listener], [], [], 0.05)
    assert not readable, "the listening socket saw a connection"


def test_a_page_comes_back_as_markdown_with_its_title_and_final_url(
    fetch: Callable[..., Any], site: str
) -> None:
    page = fetch(f"{site}/start")
    assert page["url"].endswith("/article") and page["url"].startswith("http://localhost:")
    assert page["redirects"] == [f"{site}/start", f"{site}/hop"]
    assert page["title"] == "Tomatoes & water" and page["status"] == 200
    text = page["markdown"]
    assert text.startswith("# Watering tomatoes") and "twice a week" in text
    assert "[more](http://localhost:" in text  # links kept, made absolute
    assert "Copyright" not in text and "Shop" not in text  # boilerplate dropped


def test_size_time_and_redirects_are_bounded(fetch: Callable[..., Any], site: str) -> None:
    big = fetch(f"{site}/big")
    assert big["truncated"] and big["bytes"] == MAX_BYTES
    for path in ("/slow", "/trickle"):
        started = time.monotonic()
        with pytest.raises(ToolCallError, match="took over 2 s"):
            fetch(site + path)
        assert time.monotonic() - started < 3.0
    with pytest.raises(ToolCallError, match="more than 3 redirects"):
        fetch(f"{site}/loop")
    with pytest.raises(ToolCallError, match="image/png, not a page of text"):
        fetch(f"{site}/binary")


def _own_addresses() -> list[str]:
    """This machine's addresses besides loopback (a container's private or ULA ones)."""
    found = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    return sorted(a for a in found if not ipaddress.ip_address(a.split("%")[0]).is_loopback)


def test_every_local_address_is_refused_before_any_connection(
    strict: Callable[..., Any], listener: socket.socket, connections: list
) -> None:
    port = listener.getsockname()[1]
    hosts = ["127.0.0.1", "127.9.9.9", "[::1]", "0.0.0.0", "[::]", "[::ffff:127.0.0.1]"]
    hosts += ["localhost", "LOCALHOST", "0x7f000001", "2130706433"]
    hosts += [f"[{a}]" if ":" in a else a for a in _own_addresses()]
    for host in hosts:
        with pytest.raises(ToolCallError, match="fetch_url refuses"):
            strict(f"http://{host}:{port}/")
        _no_connection(listener)
    assert connections == []


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "not a public"),
        ("224.0.0.251", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("198.18.0.1", "private"),
        ("[fd00::1]", "private"),
        ("[fe80::1]", "link-local"),
        ("[::ffff:10.0.0.1]", "carries 10.0.0.1"),
        ("[::ffff:169.254.169.254]", "carries 169.254.169.254"),
        ("[64:ff9b::a9fe:a9fe]", "carries 169.254.169.254"),
        ("[2002:a00:1::]", "carries 10.0.0.1"),
    ],
)
def test_each_address_class_is_refused_before_any_connection(
    strict: Callable[..., Any], connections: list, address: str, why: str
) -> None:
    with pytest.raises(ToolCallError, match=f"fetch_url refuses .*{why}"):
        strict(f"http://{address}/latest/meta-data/")
    assert connections == []


def test_public_addresses_pass_the_check() -> None:
    for address in ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "1.1.1.1"):
        assert refusal(ipaddress.ip_address(address)) is None


def test_a_redirect_to_a_refused_address_is_refused_before_connecting(
    fetch: Callable[..., Any], site: str, listener: socket.socket
) -> None:
    with pytest.raises(ToolCallError, match=r"refuses 0\.0\.0\.0: the unspecified address"):
        fetch(f"{site}/escape")
    _no_connection(listener)


def test_a_name_is_resolved_once_and_one_bad_address_refuses_it(
    fetch: Callable[..., Any], site: str, monkeypatch: pytest.MonkeyPatch, connections: list
) -> None:
    """A rebinding DNS server answers a checked address first and another one later: the
    connection goes to the first answer, and there is no later question to answer."""
    port = int(site.rsplit(":", 1)[1])
    answers = iter(["127.0.0.1", "10.0.0.1"])
    asked: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host: str, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        if not host.endswith(".example"):  # an address resolves to itself, with no DNS
            return real(host, *args, **kwargs)
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    assert fetch(f"http://garden.example:{port}/article")["title"] == "Tomatoes & water"
    assert asked == ["garden.example"] and connections == [("127.0.0.1", port)]

    def mixed(host: str, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    with pytest.raises(ToolCallError, match=r"refuses 10\.0\.0\.1"):
        fetch(f"http://mixed.example:{port}/article")
    assert len(connections) == 1  # still only the first fetch's


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/", "http://user:pw@example.com/", "", 7]
)
def test_bad_urls_are_refused_clearly(strict: Callable[..., Any], url: Any) -> None:
    with pytest.raises(ToolInputError, match="fetch_url"):
        strict(url)


def test_a_page_that_needs_javascript_is_rendered_by_chromium_offline(
    fetch: Callable[..., Any], site: str, listener: socket.socket
) -> None:
    if shutil.which("chromium") is None:
        missing("chromium is missing", "install it: scripts/setup (apt-get install chromium)")
    plain = fetch(f"{site}/scripted")
    assert "written by the page script" not in plain["markdown"]
    rendered = _fetcher(tools={"fetch_allowed_networks": ["127.0.0.0/8"], "fetch_timeout": 20.0})(
        f"{site}/scripted", render=True
    )
    assert rendered["rendered"] and "written by the page script" in rendered["markdown"]
    _no_connection(listener)  # the image on 0.0.0.0 was refused, not fetched


def test_a_bad_allowed_network_is_a_setting_error(home: object) -> None:
    with pytest.raises(ConfigError, match=r"fetch_allowed_networks: '10\.0\.0\.0/33'"):
        Settings(tools={"fetch_allowed_networks": ["10.0.0.0/33"]})


# -- issue 45: the work after the download ------------------------------------------------


def _rss(pid: int | str = "self") -> int:
    """A process's resident memory, bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    return 0


def _peak_during(call: Callable[[], Any]) -> tuple[Any, float, int]:
    """``call()``'s result (or the ``ToolCallError`` it raised), its seconds, and this
    process's peak resident memory above the level before, sampled every 5 ms."""
    base = peak = _rss()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        outcome: Any = call()
    except ToolCallError as exc:
        outcome = exc
    finally:
        seconds = time.monotonic() - started
        done.set()
        sampler.join()
    return outcome, seconds, peak - base


def test_extraction_keeps_to_the_deadline_and_out_of_the_server_s_memory(
    site: str, home: object
) -> None:
    """1.6 MB of two-letter paragraphs took 22-32 s and ~280 MB of the server past a 3 s
    timeout: the extraction ran after the download, in the server, with no bound. Now it
    ends by the deadline, in a process of its own; given time, the first MiB is read."""
    allowed = {"fetch_allowed_networks": ["127.0.0.0/8"], "fetch_max_bytes": 2 << 20}
    short = _fetcher(tools=allowed | {"fetch_timeout": 3.0})
    outcome, seconds, grew = _peak_during(lambda: short(f"{site}/paragraphs"))
    assert seconds < 4.0, f"{seconds:.1f} s for a 3 s timeout"
    assert grew < 100 << 20, f"the server grew {grew >> 20} MiB"
    if isinstance(outcome, ToolCallError):  # a fast machine may finish within 3 s
        assert "took over 3 s (its text was still being extracted)" in str(outcome)
    patient = _fetcher(tools=allowed | {"fetch_timeout": 30.0})
    outcome, seconds, grew = _peak_during(lambda: patient(f"{site}/paragraphs"))
    assert not isinstance(outcome, ToolCallError), outcome
    assert outcome["truncated"] and outcome["title"] == "Short"
    assert outcome["markdown"].startswith("ab") and grew < 100 << 20, grew >> 20


def _descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, with its command name."""
    parents: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
        state, ppid = rest.split()[:2]
        if state != "Z":
            parents.setdefault(int(ppid), []).append(int(entry.name))
            names[int(entry.name)] = name
    found: dict[int, str] = {}
    pending = [pid]
    while pending:
        for child in parents.get(pending.pop(), []):
            found[child] = names[child]
            pending.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return " Z " not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    except OSError:
        return False


def test_a_page_that_loops_after_loading_is_stopped_browser_and_all(site: str) -> None:
    """Chromium burned a core 45 s past a 5 s timeout: ``page.content()`` waits for a
    main thread that a looping script never gives back. The call runs in a child process
    here (the old code never returned); every process it started is watched: at the
    deadline the whole browser is killed and the call ends."""
    if shutil.which("chromium") is None:
        missing("chromium is missing", "install it: scripts/setup (apt-get install chromium)")
    # A fresh interpreter, not a fork of this worker: a fork inherits the locks its other
    # threads held (xdist's, a server's), and the child hung on one under load in CI.
    script = (
        "import json, sys, time\n"
        "from tests.security.test_fetch_url import _fetcher\n"
        "render = _fetcher(tools={'fetch_allowed_networks': ['127.0.0.0/8'], "
        "'fetch_timeout': 4.0})\n"
        "started = time.monotonic()\n"
        "try:\n"
        "    render(sys.argv[1], render=True)\n"
        "    what = 'rendered'\n"
        "except Exception as exc:\n"
        "    what = f'{type(exc).__name__}: {exc}'\n"
        "print(json.dumps([what, time.monotonic() - started]), flush=True)\n"
        "time.sleep(60)  # still here: whatever it left running stays its descendant\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, f"{site}/looping"],
        cwd=Path(__file__).parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, str] = {}
    outcome = None
    try:
        limit = time.monotonic() + 20
        while outcome is None and time.monotonic() < limit:
            seen |= _descendants(process.pid)
            if select.select([process.stdout], [], [], 0.1)[0]:
                outcome = json.loads(process.stdout.readline())
        time.sleep(0.5)
        left = {pid: name for pid, name in seen.items() if _alive(pid)}
    finally:
        for pid in [*_descendants(process.pid), *seen]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        process.kill()
        process.wait()
        process.stdout.close()
    assert any("chrom" in name for name in seen.values()), seen  # the browser did start
    assert outcome is not None, "the call was still running 20 s after a 4 s timeout"
    what, seconds = outcome
    assert "took over 4 s (the page was still loading or running" in what, what
    assert seconds < 6.0
    assert not [name for name in left.values() if "chrom" in name or name == "bwrap"], left


def test_a_page_that_never_idles_is_read_before_the_deadline(site: str) -> None:
    """What a polling page shows is read early enough to extract its text by the
    deadline, which kills the browser: the wait for the network to idle stops first."""
    if shutil.which("chromium") is None:
        missing("chromium is missing", "install it: scripts/setup (apt-get install chromium)")
    render = _fetcher(tools={"fetch_allowed_networks": ["127.0.0.0/8"], "fetch_timeout": 5.0})
    started = time.monotonic()
    rendered = render(f"{site}/polling", render=True)
    assert "asks the server for news" in rendered["markdown"]
    assert time.monotonic() - started < 5.0


def test_rendering_is_refused_without_the_sandbox(
    site: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without bubblewrap, the proxy flags were Chromium's only fence, and WebRTC went
    around them: a page's STUN request reached a UDP socket on loopback. Rendering now
    needs the sandbox, and says how to get it."""
    if shutil.which("chromium") is None:
        missing("chromium is missing", "install it: scripts/setup (apt-get install chromium)")
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with udp, tcp:
        udp.bind(("127.0.0.1", 0))
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(4)
        Site.udp_port, Site.tcp_port = udp.getsockname()[1], tcp.getsockname()[1]
        render = _fetcher(tools={"fetch_allowed_networks": ["127.0.0.0/8"], "fetch_timeout": 20.0})
        if shutil.which("bwrap") is not None:  # in the sandbox: rendered, nothing reached
            rendered = render(f"{site}/webrtc", render=True)
            assert "opened a peer connection" in rendered["markdown"]
            readable, _, _ = select.select([udp, tcp], [], [], 1.0)
            assert readable == [], "a WebRTC request reached loopback from the sandbox"
        bin_dir = tmp_path / "bin"  # Chromium on the PATH, bubblewrap not
        bin_dir.mkdir()
        (bin_dir / "chromium").symlink_to(shutil.which("chromium") or "")
        monkeypatch.setenv("PATH", str(bin_dir))
        with pytest.raises(ToolCallError, match=r"bwrap is not installed: sudo apt-get install"):
            render(f"{site}/webrtc", render=True)
        readable, _, _ = select.select([udp, tcp], [], [], 1.0)
        assert readable == [], "a WebRTC request reached loopback"
