"""A loopback server speaking OpenAI's /v1/embeddings wire format, errors included.

It stands in for paid embedding services (OpenAI, hosted TEI), which tests cannot
reach. Vectors are derived from the text's SHA-256, so equal texts get equal vectors.
Send ``"model": "fail-500"`` or ``"fail-garbage"`` to get those failures.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np


def vector_for(text: str, dim: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).round(6).tolist()


class _Handler(BaseHTTPRequestHandler):
    dim = 8
    requests: ClassVar[list[dict]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **payload}
        )
        if self.path != "/v1/embeddings":
            self._send(404, b'{"error": {"message": "Not found", "type": "invalid_request_error"}}')
        elif payload["model"] == "fail-500":
            error = {"error": {"message": "The server had an error", "type": "server_error"}}
            self._send(500, json.dumps(error).encode())
        elif payload["model"] == "fail-garbage":
            self._send(200, b"<html>proxy error</html>", "text/html")
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": vector_for(t, self.dim)}
                for i, t in enumerate(payload["input"])
            ]
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            body = {"object": "list", "data": data[::-1], "model": payload["model"], "usage": usage}
            self._send(200, json.dumps(body).encode())


@contextmanager
def serve(dim: int = 8) -> Iterator[tuple[str, list[dict]]]:
    """``(base_url, requests seen)`` of a server running on 127.0.0.1 for the block."""
    handler = type("Handler", (_Handler,), {"dim": dim, "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", handler.requests
    finally:
        server.shutdown()
        server.server_close()
