"""The worst a single request of at most 64 KB can cost ``heron serve`` (issue 33), and
the bounds of ``fetch_url`` on pages that cost after their download (issue 45).

A server subprocess on loopback (the bundled local model, a fresh HERON_HOME); each
attack is sent once, alone, and the server's CPU time (user + system, psutil) and its
peak resident memory above the level before the request (sampled every 5 ms) are
measured. Target: at most 100 MB and 2 s of CPU each.

The same server has ``fetch_url`` on, loopback allowed and a 3 s timeout, and a page
server in this process: each page is fetched through ``tools.call``, and besides the
server's own figures, the CPU of the processes it started that have ended (extraction,
Playwright's driver with its browser) and the Chromium and bubblewrap processes still
running under it half a second after the answer are counted.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psutil

from bench.common import table
from bench.server import start_server

LIMIT = 64 * 1024


def schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}


def chat(**fields: Any) -> dict[str, Any]:
    body = {"model": "local", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    return body | fields


def attacks() -> list[tuple[str, str, dict[str, Any]]]:
    """(what, path, body): each body is at most ``LIMIT`` bytes of JSON."""
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "ok"} for i in range(1600)]
    strings = {f"p{i}": {"type": "string", "maxLength": 9000} for i in range(12)}
    optional = {f"p{i}": {"type": "string"} for i in range(300)}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20):
        deep = {"type": "array", "items": deep}
    return [
        (
            "minLength 20,000,000",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "string", "minLength": 20_000_000})),
        ),
        (
            "maxLength 1,999 (was a segfault)",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "string", "maxLength": 1999})),
        ),
        (
            "12 strings of maxLength 9,000",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "object", "properties": strings})),
        ),
        (
            "300 optional properties",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "object", "properties": optional})),
        ),
        (
            "nested arrays, depth 20",
            "/v1/chat/completions",
            chat(response_format=schema_format(deep)),
        ),
        (
            "forced tool, maxItems 10,000",
            "/v1/chat/completions",
            chat(
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "f",
                            "parameters": {
                                "type": "object",
                                "properties": {"x": {"type": "array", "maxItems": 10000}},
                            },
                        },
                    }
                ],
                tool_choice={"type": "function", "function": {"name": "f"}},
            ),
        ),
        (
            "1,600 short turns",
            "/v1/chat/completions",
            chat(messages=[*turns, {"role": "user", "content": "hi"}]),
        ),
        (
            "one 60 KB message",
            "/v1/chat/completions",
            chat(messages=[{"role": "user", "content": "word " * 12_000}]),
        ),
        (
            "embeddings: 2,048 short inputs",
            "/v1/embeddings",
            {"model": "m", "input": ["pods and nodes"] * 2048},
        ),
        (
            # Issue 45: 2,048 estimated tokens, within the cap, and 7.8-9.4 s of CPU.
            "embeddings: 2,048 two-character inputs",
            "/v1/embeddings",
            {"model": "m", "input": ["ab"] * 2048},
        ),
        (
            # The most texts the pair takes, however short (heron.server.doors.embeddings.PER_TEXT).
            "embeddings: 180 two-character inputs",
            "/v1/embeddings",
            {"model": "m", "input": ["ab"] * 180},
        ),
        (
            "embeddings: one 60 KB input",
            "/v1/embeddings",
            {"model": "m", "input": ["word " * 12_000]},
        ),
        (
            "embeddings: 24 KB in 96 texts",
            "/v1/embeddings",
            {"model": "m", "input": ["the scheduler binds pods " * 10] * 96},
        ),
        (
            # The most the token cap lets the multilingual pair embed: 24 texts of about 84
            # estimated tokens and 12 each (PER_TEXT) at its cost of 3.5
            # (heron.embed.multilingual.COST), 8,064 of 8,192.
            "embeddings: 6 KB in 24 texts",
            "/v1/embeddings",
            {"model": "m", "input": ["the scheduler binds pods " * 10] * 24},
        ),
        (
            "rpc agent.chat, 60 KB message",
            "/rpc",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "agent.chat",
                "params": {"message": "word " * 12_000, "answer": "extractive"},
            },
        ),
        (
            "rpc batch of 100 search.query",
            "/rpc",
            [
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "search.query",
                    "params": {"query": "pods " * 100},
                }
                for i in range(100)
            ],
        ),
    ]


def measure(proc: psutil.Process, send: Callable[[], int]) -> tuple[int, float, float, float]:
    """``send()``'s status, its seconds, the server's CPU seconds and peak MB above the
    level before."""
    base = proc.memory_info().rss
    peak = base
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, proc.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    cpu = proc.cpu_times()
    started = time.perf_counter()
    sampler.start()
    try:
        status = send()
    finally:
        done.set()
        sampler.join()
    after = proc.cpu_times()
    used = after.user + after.system - cpu.user - cpu.system
    return status, time.perf_counter() - started, used, (peak - base) / 1e6


#: fetch_url's timeout on the bench's server, seconds (the attack run's was 3 s).
FETCH_TIMEOUT = 3
#: The pages of issue 45's attacks on fetch_url, and an ordinary one of each kind.
PAGES = {
    "/paragraphs": b"<html><head><title>Short</title></head><body>" + b"<p>ab</p>" * 180_000,
    "/article": (
        "<html><head><title>An article</title></head><body><article>"
        + "".join(
            f"<p>Paragraph {i} of an ordinary article, with a sentence or two in it.</p>"
            for i in range(300)
        )
        + "</article></body></html>"
    ).encode(),
    "/looping": (
        b"<html><head><title>Busy</title></head><body><article><p>This page loops once it "
        b"has loaded.</p></article><script>addEventListener('load', () => setTimeout(() => "
        b"{ for (;;) {} }, 50));</script></body></html>"
    ),
    "/scripted": (
        b"<html><head><title>Scripted</title></head><body><article><p id='t'>Loading</p>"
        b"</article><script>document.getElementById('t').textContent = 'Written by the "
        b"page script after it loaded, as single-page applications write theirs.';"
        b"</script></body></html>"
    ),
}
FETCHES = [
    ("an ordinary article", "/article", False),
    ("1.6 MB of two-letter paragraphs", "/paragraphs", False),
    ("rendered: an ordinary scripted page", "/scripted", True),
    ("rendered: a page that loops after load", "/looping", True),
]


class _Pages(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = PAGES.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def pages() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def browsers_left(proc: psutil.Process) -> int:
    """Chromium and bubblewrap processes still running under the server."""
    found = 0
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE and (
                "chrom" in child.name() or child.name() == "bwrap"
            ):
                found += 1
    return found


def fetch_rows(proc: psutil.Process, url: str) -> list[tuple[Any, ...]]:
    rows = []
    with pages() as site:
        for what, path, render in FETCHES:
            arguments = {"url": site + path, "render": render}
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools.call",
                "params": {"name": "fetch_url", "arguments": arguments},
            }
            answer: dict[str, Any] = {}

            def call(body: dict[str, Any] = body, answer: dict[str, Any] = answer) -> int:
                reply = httpx.post(url + "/rpc", json=body, timeout=300)
                answer.update(reply.json())
                return reply.status_code

            children = _children_cpu(proc)
            _, seconds, cpu, mb = measure(proc, call)
            time.sleep(0.5)  # what the call started is reaped, its CPU counted
            children = _children_cpu(proc) - children
            if "result" in answer:
                got = answer["result"]["result"]
                outcome = f"read {len(got['markdown']):,} chars" + (
                    ", truncated" if got["truncated"] else ""
                )
            else:
                message = answer.get("error", {}).get("message", "")
                outcome = "stopped at the deadline" if "took over" in message else message[:60]
            rows.append(
                (
                    what,
                    f"{len(PAGES[path]) / 1024:.1f}",
                    outcome,
                    f"{seconds:.2f}",
                    f"{cpu:.2f}",
                    f"{mb:.1f}",
                    f"{children:.2f}",
                    browsers_left(proc),
                )
            )
    return rows


def _children_cpu(proc: psutil.Process) -> float:
    """CPU seconds of the server's children that have ended (the extraction processes;
    Playwright's driver, with the browser it reaped)."""
    times = proc.cpu_times()
    return times.children_user + times.children_system


def run() -> str:
    home = tempfile.mkdtemp(prefix="heron-security-")
    server, url = start_server(
        {
            "HERON_HOME": home,
            "HERON_LIBRARY_DEFAULT_DOCS": "true",
            "HERON_TOOLS_FETCH_URL": "true",
            "HERON_TOOLS_FETCH_ALLOWED_NETWORKS": '["127.0.0.0/8"]',
            "HERON_TOOLS_FETCH_TIMEOUT": str(FETCH_TIMEOUT),
            "HERON_TOOLS_FETCH_MAX_BYTES": str(4 << 20),
        }
    )
    rows = []
    fetched = []
    try:
        proc = psutil.Process(server.pid)
        # What the first requests load once (the model, the docs library's index, the
        # grammar code) is the server's, not an attack's: each path is warmed first.
        for warm in (
            chat(),
            chat(response_format=schema_format({"type": "string", "maxLength": 16})),
            chat(response_format=schema_format({"type": "string", "maxLength": 1500})),
        ):
            httpx.post(url + "/v1/chat/completions", json=warm, timeout=300)
        httpx.post(url + "/v1/embeddings", json={"model": "m", "input": ["warm"]}, timeout=300)
        for what, path, body in attacks():
            size = len(json.dumps(body).encode())
            assert size <= LIMIT, (what, size)

            def send(path: str = path, body: Any = body) -> int:
                return httpx.post(url + path, json=body, timeout=300).status_code

            status, seconds, cpu, mb = measure(proc, send)
            rows.append(
                (
                    what,
                    path,
                    f"{size / 1024:.1f}",
                    status,
                    f"{seconds:.2f}",
                    f"{cpu:.2f}",
                    f"{mb:.1f}",
                )
            )
        fetched = fetch_rows(proc, url)
    finally:
        server.terminate()
        server.wait(30)
    return (
        table(
            "The worst single requests of at most 64 KB",
            ["attack", "route", "KB", "status", "s", "CPU s", "peak MB"],
            rows,
        )
        + "\n"
        + table(
            f"fetch_url past its download ({FETCH_TIMEOUT} s timeout)",
            [
                "page",
                "KB",
                "outcome",
                "s",
                "server CPU s",
                "server peak MB",
                "children CPU s",
                "browsers left",
            ],
            fetched,
        )
    )
