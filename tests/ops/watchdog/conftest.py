"""Real parts for the watchdog's tests: a loopback HTTP endpoint that fails its first N
requests, a JSON-RPC endpoint recording its calls, an apprise JSON webhook, and a
fresh HERON_HOME."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from heron.ops.watchdog import Watchdog, parse_config
from heron.settings import Settings
from tests.test_notify import hook  # noqa: F401 (the loopback webhook fixture)


class Endpoint:
    """``GET /ready``: 503 for the first ``failures`` requests, then 200 ``{"ready": true}``;
    ``POST /rpc``: records the JSON-RPC call and answers ``{"result": "ok"}``."""

    def __init__(self) -> None:
        self.failures = 0
        self.calls: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                failing = endpoint.failures > 0
                endpoint.failures -= failing
                self._answer(503 if failing else 200, {"ready": not failing})

            def do_POST(self) -> None:
                call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.calls.append(call)
                self._answer(200, {"jsonrpc": "2.0", "id": call["id"], "result": "ok"})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    with e.server:  # closed at the end
        threading.Thread(target=e.server.serve_forever, daemon=True).start()
        yield e
        e.server.shutdown()


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings(library={"default_docs": False})


def python(code: str) -> list[str]:
    """An argv running ``code`` with this interpreter (no shell)."""
    return [sys.executable, "-c", code]


def appender(path: Path) -> list[str]:
    """A remedy that appends a line to ``path``: how many times it ran is its length."""
    return python(f"open({str(path)!r}, 'a').write('ran\\n')")


def watchdog(settings: Settings, yml: str, **options: Any) -> Watchdog:
    return Watchdog(parse_config(yml, "watchdog.yml"), settings, **options)


def alerts_of(report: dict[str, Any]) -> list[str]:
    return [a["alert"] for a in report["actions"] if a["action"] == "alert"]
