"""Attacks on the HTTP edge, each through a real server on loopback (or the real
``heron serve``): a web page posting across sites, DNS rebinding, oversized and chunked
bodies, deep and non-finite JSON, a Unix socket other users could open.

Each attack names what would happen if it worked (a file written through ``tools.call``,
a 5xx, a bare ``Infinity``) and asserts that it does not.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.routing import Route

from heron.errors import ConfigError
from heron.server import create_app
from heron.settings import Settings
from tests.server import conftest as server
from tests.server.conftest import (
    Served,
    free_socket,
    heron_env,
    running,
    start_heron,
    wait_healthy,
)

# The real server over an indexed HERON_HOME, as tests/server use it (module fixtures).
heron_home = server.heron_home
served = server.served

EVIL = "http://evil.example"
APP = "https://app.example"
MIB = 1024 * 1024
#: The limit every server here runs with (the default).
MAX_BODY = 8 * MIB


def not_json(name: str) -> None:
    raise AssertionError(f"a bare {name} in a reply: not JSON")


def strict(response: httpx.Response) -> Any:
    """The reply's body as strict JSON (no NaN, no Infinity), whatever its status."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    return json.loads(response.content, parse_constant=not_json)


def write_call(name: str) -> dict[str, Any]:
    """The issue's attack: a JSON-RPC call that writes a file through ``tools.call``."""
    arguments = {"path": name, "content": "written by another site"}
    params = {"name": "write_file", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools.call", "params": params}


@pytest.fixture(scope="module")
def workspace(heron_home: Path) -> Path:
    root = heron_home / "workspace"
    root.mkdir()
    return root


@pytest.fixture(scope="module")
def edge(heron_home: Path, workspace: Path) -> Iterator[str]:
    """A server with a workspace (so ``tools.call`` can write) and a few listed hosts and
    one listed origin, the way an operator would configure them."""
    settings = Settings(
        tools={"root": workspace},
        server={
            "allowed_hosts": ["heron.lan", "api.corp.example:9443", "*.tailnet.example"],
            "allowed_origins": [APP],
        },
    )
    with running(create_app(settings)) as (url, _):
        yield url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# -- cross-site requests ------------------------------------------------------------------


def test_the_payload_is_real_when_a_client_sends_it(edge: str, workspace: Path) -> None:
    # The control: the same call from a program (JSON, no Origin) does write. So the
    # refusals below are the edge's doing, not a payload that could never work.
    answer = httpx.post(f"{edge}/rpc", json=write_call("control.txt")).json()
    assert "error" not in answer, answer
    assert (workspace / "control.txt").exists()


@pytest.mark.parametrize(
    ("content_type", "origin"),
    [
        ("text/plain", EVIL),  # what a page may send anywhere without a preflight
        ("text/plain;charset=UTF-8", None),  # an old browser that sends no Origin
        ("application/x-www-form-urlencoded", EVIL),  # a plain <form>
        ("multipart/form-data; boundary=x", EVIL),
        (None, EVIL),
        ("application/json", EVIL),  # e.g. a page that got a preflight through somehow
        ("application/json", "null"),  # a sandboxed frame or a file:// page
        ("application/json", "http://127.0.0.1:1"),  # a page on another local port
    ],
)
def test_a_web_page_cannot_write_through_rpc(
    edge: str, workspace: Path, content_type: str | None, origin: str | None
) -> None:
    headers = {k: v for k, v in {"content-type": content_type, "origin": origin}.items() if v}
    body = json.dumps(write_call("pwned.txt"))
    response = httpx.post(f"{edge}/rpc", content=body, headers=headers)
    assert response.status_code in (403, 415), response.text
    answer = strict(response)
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert "HERON_SERVER_ALLOWED_ORIGINS" in answer["error"]["message"] or (
        "application/json" in answer["error"]["message"]
    )
    assert "access-control-allow-origin" not in response.headers
    assert not (workspace / "pwned.txt").exists()


@pytest.mark.parametrize(
    "path", ["/v1/chat/completions", "/chat/stream", "/interventions/1/outcome", "/rpc", "/later"]
)
def test_json_routes_refuse_text_plain(edge: str, path: str) -> None:
    body = '{"model": "local", "messages": [{"role": "user", "content": "hi"}], "message": "hi"}'
    plain = httpx.post(f"{edge}{path}", content=body, headers={"content-type": "text/plain"})
    latin = httpx.post(
        f"{edge}{path}", content=body, headers={"content-type": "application/json; charset=latin-1"}
    )
    for response in (plain, latin):
        assert response.status_code == 415
        assert "application/json" in strict(response)["error"]["message"]


def test_json_with_a_utf8_charset_is_json(edge: str) -> None:
    response = httpx.post(
        f"{edge}/rpc",
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "library.list"}',
        headers={"content-type": "Application/JSON; charset=utf-8"},
    )
    assert response.status_code == 200 and strict(response)["result"][0]["name"] == "tiny"


# Every route, and routes that do not exist yet (the web UI at /): one middleware guards all.
ROUTES = [
    ("GET", "/health", None),
    ("GET", "/local/hello?nonce=0123456789abcdef", None),
    ("GET", "/ready", None),
    ("GET", "/metrics", None),
    ("GET", "/v1/models", None),
    ("GET", "/v1/models/local", None),
    ("POST", "/v1/chat/completions", {"model": "local", "messages": []}),
    ("POST", "/v1/embeddings", {"model": "any", "input": "a stolen page"}),
    ("POST", "/v1/audio/speech", {"model": "speech", "input": "a stolen voice"}),
    ("POST", "/v1/audio/transcriptions", None),
    ("POST", "/chat/stream", {"message": "hi"}),
    ("GET", "/chat/stream/abc", None),
    ("GET", "/jobs/abc/events/stream", None),
    ("GET", "/jobs/stream?room=team", None),
    ("POST", "/watchdog/heartbeat/nightly", {}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ("GET", "/mcp", None),
    ("DELETE", "/mcp", None),
    ("POST", "/mcp/fleet", {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ("GET", "/mcp/fleet", None),
    ("POST", "/upload/docs", None),
    ("POST", "/rpc", write_call("rebound.txt")),
    ("GET", "/doctor", None),
    ("POST", "/doctor", None),
    ("GET", "/interventions/stream?room=team", None),
    ("POST", "/interventions/1/outcome", {"outcome": "accept", "by": "mallory"}),
    ("GET", "/interventions/audio/1.wav", None),
    ("GET", "/", None),
    ("GET", "/libraries", None),
    ("GET", "/skills", None),
    ("GET", "/tools", None),
    ("GET", "/jobs", None),
    ("GET", "/interventions", None),
    ("GET", "/operations", None),
    ("GET", "/signin", None),
    ("GET", "/source?library=docs&page=guide", None),
    ("GET", "/source/file?library=docs&page=guide", None),
    ("POST", "/signin", None),
    ("POST", "/signout", None),
    ("GET", "/static/heron.js", None),
    ("GET", "/no/such/page", None),
]


def test_every_route_of_the_app_is_in_the_attack_table(heron_home: Path) -> None:
    # A route added later fails here until ROUTES lists it: the tests below then show
    # that it is behind the Origin, Host and token checks like the others.
    listed = [(method, path.split("?")[0]) for method, path, _ in ROUTES]
    for route in create_app(Settings()).routes:
        methods = getattr(route, "methods", None) or {"GET"}
        for method in methods - {"HEAD"}:
            assert any(m == method and route.path_regex.match(p) for m, p in listed), (
                f"{method} {route.path} is not in ROUTES"
            )


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_a_foreign_origin_is_refused_on_every_route(
    edge: str, workspace: Path, method: str, path: str, body: Any
) -> None:
    response = httpx.request(method, f"{edge}{path}", json=body, headers={"origin": EVIL})
    assert response.status_code == 403
    error = strict(response)["error"]
    assert "HERON_SERVER_ALLOWED_ORIGINS" in error["message"]
    assert not any(h.startswith("access-control-") for h in response.headers)
    assert not (workspace / "rebound.txt").exists()


#: What anyone may fetch without the token: the liveness probe, a server's proof of its
#: home (heron.server.features.local), and what signing in needs.
OPEN = {("GET", "/health"), ("GET", "/local/hello?nonce=0123456789abcdef"), ("GET", "/signin"),
        ("POST", "/signin"), ("POST", "/signout"), ("GET", "/static/heron.js")}  # fmt: skip
#: The web page's panes (and the source view their passages link to): without the token
#: they send the browser to the sign-in form.
PAGES = {"/", "/libraries", "/skills", "/tools", "/jobs", "/interventions", "/operations",
         "/source", "/source/file"}  # fmt: skip


@pytest.fixture(scope="module")
def locked(heron_home: Path, workspace: Path) -> Iterator[str]:
    settings = Settings(
        tools={"root": workspace}, server={"api_token": "t0ken-for-every-route-0123456789abcdef"}
    )
    with running(create_app(settings)) as (url, _):
        yield url


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_route_needs_the_token_when_one_is_set(
    locked: str, workspace: Path, method: str, path: str, body: Any
) -> None:
    response = httpx.request(method, f"{locked}{path}", json=body, follow_redirects=False)
    if (method, path) in OPEN:
        assert response.status_code < 500
    elif path.split("?")[0] in PAGES:
        assert response.status_code == 303
        assert response.headers["location"].startswith("/signin")
    else:
        assert response.status_code == 401, (method, path, response.status_code)
    assert not (workspace / "rebound.txt").exists()


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_dns_rebinding_is_refused_on_every_route(
    edge: str, workspace: Path, method: str, path: str, body: Any
) -> None:
    # evil.example now resolves to 127.0.0.1: the browser connects here, but still says
    # whose page it is serving, in Host (and as a same-origin request, with no Origin).
    host = f"evil.example:{port_of(edge)}"
    response = httpx.request(method, f"{edge}{path}", json=body, headers={"host": host})
    assert response.status_code == 421
    error = strict(response)["error"]
    assert "HERON_SERVER_ALLOWED_HOSTS" in error["message"] and "evil.example" in error["message"]
    assert not (workspace / "rebound.txt").exists()


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "127.0.0.2:{port}",
     "heron.lan", "heron.lan:{port}", "api.corp.example:9443", "node-1.tailnet.example"],
)  # fmt: skip
def test_loopback_and_listed_hosts_are_served(edge: str, host: str) -> None:
    headers = {"host": host.format(port=port_of(edge))}
    assert httpx.get(f"{edge}/health", headers=headers).json() == {"status": "ok"}


@pytest.mark.parametrize(
    "host", ["api.corp.example:{port}", "tailnet.example", "heron.lan.evil.example", "", "a b"]
)
def test_unlisted_hosts_and_ports_are_not(edge: str, host: str) -> None:
    headers = {"host": host.format(port=port_of(edge))}
    assert httpx.get(f"{edge}/health", headers=headers).status_code == 421


def test_same_origin_and_listed_origins_are_served(edge: str) -> None:
    same = httpx.get(f"{edge}/health", headers={"origin": edge})
    listed = httpx.get(f"{edge}/health", headers={"origin": APP})
    assert same.status_code == listed.status_code == 200
    assert "access-control-allow-origin" not in same.headers  # same origin needs none
    assert listed.headers["access-control-allow-origin"] == APP


def test_a_foreign_preflight_gets_no_cors_headers(edge: str, served: Served) -> None:
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    for url in (edge, served.url):  # with an origin listed, and with none (the default)
        response = httpx.options(f"{url}/rpc", headers={"origin": EVIL, **preflight})
        assert response.status_code == 403
        assert not any(h.startswith("access-control-") for h in response.headers)
    allowed = httpx.options(f"{edge}/rpc", headers={"origin": APP, **preflight})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == APP
    assert "content-type" in allowed.headers["access-control-allow-headers"].lower()


def test_a_listed_page_still_needs_the_token(heron_home: Path) -> None:
    # Browsers send no credentials in a preflight: it is answered, the request is not.
    token = "t0ken-for-cors-test-0123456789abcdef"
    settings = Settings(server={"api_token": token, "allowed_origins": [APP]})
    with running(create_app(settings)) as (url, _):
        preflight = httpx.options(
            f"{url}/rpc",
            headers={"origin": APP, "access-control-request-method": "POST"},
        )
        bare = httpx.post(f"{url}/rpc", json={}, headers={"origin": APP})
        with_token = httpx.post(
            f"{url}/rpc",
            json={"jsonrpc": "2.0", "id": 1, "method": "library.list"},
            headers={"origin": APP, "authorization": f"Bearer {token}"},
        )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == APP
    assert bare.status_code == 401
    assert with_token.status_code == 200 and with_token.headers["access-control-allow-origin"]


@pytest.mark.parametrize(
    ("setting", "entry"),
    [("server_allowed_hosts", "a b"), ("server_allowed_hosts", "*evil"),
     ("server_allowed_origins", "app.example"), ("server_allowed_origins", "null")],
)  # fmt: skip
def test_a_bad_allowlist_entry_stops_the_server(heron_home: Path, setting: str, entry: str) -> None:
    # Refused when the app is built (heron serve exits with this message), not per request.
    with pytest.raises(ConfigError, match=f"HERON_{setting.upper()} has '.*', which is not"):
        create_app(Settings(server={setting.removeprefix("server_"): [entry]}))


def test_mcp_refuses_a_page_on_another_local_port(edge: str) -> None:
    # The MCP SDK's own loopback default let in any http://127.0.0.1:* page; the edge
    # allows only the server's own origin.
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"origin": "http://localhost:3000", "accept": "application/json, text/event-stream"}
    response = httpx.post(f"{edge}/mcp", json=init, headers=headers)
    assert response.status_code == 403 and "HERON_SERVER_ALLOWED_ORIGINS" in response.text


def test_bound_to_all_interfaces_it_serves_its_addresses_and_listed_names(
    heron_home: Path,
) -> None:
    # On 0.0.0.0 (with a token) the names clients use must be listed; the IP address a
    # request arrives on cannot be re-pointed by DNS and is served as is.
    settings = Settings(server={"api_token": "x" * 32, "allowed_hosts": ["heron.lan"]})
    app = create_app(settings, host="0.0.0.0")
    auth = {"authorization": f"Bearer {'x' * 32}"}

    async def ask(base: str, host: str | None = None) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # the connection "arrives on" base's IP
        headers = auth | ({"host": host} if host else {})
        async with httpx.AsyncClient(transport=transport, base_url=base) as client:
            return await client.get("/health", headers=headers)

    by_ip = anyio.run(ask, "http://192.0.2.7:8765")
    listed = anyio.run(ask, "http://192.0.2.7:8765", "heron.lan:8765")
    rebound = anyio.run(ask, "http://192.0.2.7:8765", "nas.home.example:8765")
    other_ip = anyio.run(ask, "http://192.0.2.7:8765", "192.0.2.99:8765")
    assert by_ip.status_code == listed.status_code == 200
    assert rebound.status_code == other_ip.status_code == 421
    fix = "HERON_SERVER_ALLOWED_HOSTS='[\"nas.home.example\"]'"
    assert fix in rebound.json()["error"]["message"]


# -- bodies -------------------------------------------------------------------------------


def chunked_post(url: str, path: str, total: int, chunk: int = 256 * 1024) -> tuple[bytes, int]:
    """POST a chunked body of up to ``total`` bytes that never ends (no final chunk);
    return what the server answered and how many bytes it let us send."""
    port = port_of(url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"%x\r\n%s\r\n" % (chunk, b"[" * chunk)
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode())
        try:
            while sent < total:
                sock.sendall(piece)
                sent += chunk
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server hung up: it stopped reading
        reply = b""
        try:
            while chunk_ := sock.recv(65536):
                reply += chunk_
        except ConnectionResetError:
            pass
    return reply, sent


@pytest.mark.parametrize("path", ["/rpc", "/v1/chat/completions", "/chat/stream", "/mcp"])
def test_a_chunked_body_is_cut_off_at_the_limit(served: Served, path: str) -> None:
    reply, sent = chunked_post(served.url, path, 64 * MIB)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), reply[:300]
    assert b"HERON_SERVER_MAX_BODY" in body and json.loads(body)
    # It answered before the body ended and hung up instead of reading on (what the
    # client had sent by then depends on the machine's load: 18 MiB once under CI).
    assert sent < 32 * MIB
    assert httpx.get(f"{served.url}/health").status_code == 200


def test_a_declared_length_over_the_limit_is_refused_unread(served: Served) -> None:
    port = port_of(served.url)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode())  # and not one byte of the body
        reply = b""
        while chunk := sock.recv(65536):  # the server answers, then hangs up
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 413") and b"HERON_SERVER_MAX_BODY" in reply


# -- JSON ---------------------------------------------------------------------------------


def post_rpc(url: str, body: bytes) -> Any:
    response = httpx.post(f"{url}/rpc", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    return strict(response)


def test_a_batch_past_the_limit_is_one_error(served: Served) -> None:
    call = {"jsonrpc": "2.0", "method": "rpc.discover"}
    over = post_rpc(served.url, json.dumps([{**call, "id": i} for i in range(101)]).encode())
    assert over["id"] is None and over["error"]["code"] == -32600
    assert "at most 100" in over["error"]["message"] and over["error"]["data"]["calls"] == 101
    small = {"jsonrpc": "2.0", "method": "library.list"}
    full = post_rpc(served.url, json.dumps([{**small, "id": i} for i in range(100)]).encode())
    assert len(full) == 100 and all("result" in a for a in full)


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [65, 1_000, 100_000])
def test_deep_nesting_is_an_invalid_request_not_a_crash(served: Served, levels: int) -> None:
    whole = post_rpc(served.url, deep(levels).encode())
    params = f'{{"query": "pods", "library": {deep(levels)}}}'
    inside = post_rpc(
        served.url,
        b'{"jsonrpc": "2.0", "id": 1, "method": "search.query", "params": %s}' % params.encode(),
    )
    for answer in (whole, inside):
        assert answer["error"]["code"] == -32600 and answer["id"] is None
        assert "deeper than 64" in answer["error"]["message"]


def test_nesting_under_the_limit_reaches_validation(served: Served) -> None:
    params = f'{{"query": "pods", "library": {deep(60)}}}'
    answer = post_rpc(
        served.url,
        b'{"jsonrpc": "2.0", "id": 1, "method": "search.query", "params": %s}' % params.encode(),
    )
    assert answer["error"]["code"] == -32602 and answer["id"] == 1


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/stream"])
def test_deep_or_non_finite_bodies_elsewhere_are_400(served: Served, path: str) -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "hi", "x": "DEEP"}]}
    body = json.dumps({"model": "local", "message": "hi", "messages": [message]})
    bodies = {  # each refused for what it is, before any field is looked at
        "deeper than 64": body.replace('"DEEP"', deep(100_000)),
        "NaN is not JSON": body.replace('"DEEP"', "NaN"),
        "1e400 is out of range": body.replace('"DEEP"', "1e400"),
    }
    for problem, body in bodies.items():
        response = httpx.post(
            f"{served.url}{path}", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, response.text
        assert problem in strict(response)["error"]["message"]


@pytest.mark.parametrize("id_", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_a_non_finite_id_is_never_echoed(served: Served, id_: str) -> None:
    one = b'{"jsonrpc": "2.0", "id": %s, "method": "library.list"}' % id_.encode()
    for body in (one, b"[" + one + b"]"):
        answer = post_rpc(served.url, body)  # strict(): a bare Infinity would fail here
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert "finite" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("body", "code"),
    [(b"", -32700), (b"\xff\xfe\xfa", -32700), (b'{"jsonrpc": "2.0", "id": 1, "method": "\xc3"}',
     -32700), (b"5", -32600), (b'"x"', -32600), (b"null", -32600), (b"true", -32600)],
)  # fmt: skip
def test_malformed_bodies_are_json_rpc_errors(served: Served, body: bytes, code: int) -> None:
    answer = post_rpc(served.url, body)
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert answer["error"]["code"] == code


# -- errors are JSON ----------------------------------------------------------------------


def test_http_errors_are_json(served: Served) -> None:
    missing = httpx.get(f"{served.url}/no/such/page")
    wrong_method = httpx.get(f"{served.url}/rpc")
    put = httpx.put(f"{served.url}/v1/models")
    assert missing.status_code == 404 and "/no/such/page" in strict(missing)["error"]["message"]
    assert wrong_method.status_code == 405 and strict(wrong_method)["error"]["code"] == -32600
    assert put.status_code == 405 and "GET" in strict(put)["error"]["message"]


def test_a_bug_is_a_json_500_without_its_traceback(heron_home: Path) -> None:
    def boom(request: object) -> None:
        raise RuntimeError("secret detail of a bug")

    app = create_app(Settings())
    app.router.routes.append(Route("/boom", boom))
    with running(app) as (url, _):
        response = httpx.get(f"{url}/boom")
    assert response.status_code == 500
    assert "log" in strict(response)["error"]["message"]
    assert "secret detail" not in response.text and "Traceback" not in response.text


# -- Unix socket and files ----------------------------------------------------------------


def first_mode(path: Path, proc: subprocess.Popen[str], timeout: float = 120) -> int:
    """The socket's mode the first moment it exists (polled every millisecond)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return stat.S_IMODE(os.lstat(path).st_mode)
        except FileNotFoundError:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.001)
    raise AssertionError(f"{path} never appeared")


def health(http: httpx.Client, proc: subprocess.Popen[str], timeout: float = 120) -> Any:
    """``/health``'s answer once the server answers (a socket left behind by an earlier
    server refuses connections until the new one has replaced it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return http.get("/health").json()
        except httpx.TransportError:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the server did not answer"
            time.sleep(0.05)


def test_the_unix_socket_is_private(heron_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "heron.sock"
    # The second start also finds the first one's socket left behind, and replaces it.
    for args, mode in (([], 0o600), (["--uds-mode", "660"], 0o660)):
        proc = start_heron(["serve", "--uds", str(path), *args], heron_env(heron_home))
        try:
            born = first_mode(path, proc) if not path.exists() else None
            transport = httpx.HTTPTransport(uds=str(path))
            # Over a socket any Host will do: no browser can open one, nothing to rebind.
            with httpx.Client(transport=transport, base_url="http://heron", timeout=120) as http:
                assert health(http, proc) == {"status": "ok"}
            # Born 0600 (bound under umask 0o177), then widened only as asked.
            assert born in (None, 0o600, mode)
            assert stat.S_IMODE(os.lstat(path).st_mode) == mode
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)


def test_uds_mode_is_documented_and_checked(heron_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, **heron_env(heron_home)}
    run = [sys.executable, "-m", "heron", "serve"]
    shown = subprocess.run([*run, "--help"], env=env, capture_output=True, text=True)
    bad = subprocess.run(
        [*run, "--uds", str(tmp_path / "s"), "--uds-mode", "9z"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "--uds-mode" in shown.stdout and "600" in shown.stdout
    assert bad.returncode == 2 and "octal" in bad.stderr


def test_a_file_in_the_sockets_place_is_not_clobbered(heron_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "precious.txt"
    path.write_text("keep me")
    proc = start_heron(["serve", "--uds", str(path)], heron_env(heron_home))
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "is not a socket" in stderr
    assert path.read_text() == "keep me"


def test_a_fresh_heron_home_is_0700_and_its_databases_0600(tmp_path: Path) -> None:
    env = heron_env(tmp_path)  # HERON_HOME does not exist yet
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    proc = start_heron(["serve", "--port", str(port)], env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        call = {"jsonrpc": "2.0", "id": 1, "method": "search.query", "params": {"query": "x"}}
        httpx.post(f"{url}/rpc", json=call, timeout=120)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    home = Path(env["HERON_HOME"])
    databases = sorted(p for p in home.rglob("*") if p.name.endswith((".db", "-wal", "-shm")))
    assert {"heron.db", "jobs.db"} <= {p.name for p in databases}
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in databases} == {
        p.name: oct(0o600) for p in databases
    }
