"""``heron serve`` as a user runs it: loopback by default, a token off loopback, the
token checked on every request and never written to the logs, a Unix socket."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import pytest

from heron.errors import ConfigError
from heron.server import check_bind
from heron.settings import Settings
from tests.server.conftest import free_socket, heron_env, start_heron, wait_healthy

TOKEN = "s3cret-token-for-tests-7f2c-0123456789ab"


def test_refuses_a_public_address_without_a_token(heron_home: Path) -> None:
    proc = start_heron(["serve", "--host", "0.0.0.0", "--port", "0"], heron_env(heron_home))
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "HERON_API_TOKEN" in stderr and "Refusing to listen on 0.0.0.0" in stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "heron.example.com"])
@pytest.mark.parametrize("token", [None, "", "  "])
def test_check_bind_needs_a_real_token_off_loopback(host: str, token: str | None) -> None:
    with pytest.raises(ConfigError, match="HERON_API_TOKEN"):
        check_bind(host, None, Settings(server={"api_token": token}))
    check_bind(host, None, Settings(server={"api_token": TOKEN}))
    check_bind(host, Path("/run/heron.sock"), Settings(server={"api_token": token}))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_token(host: str) -> None:
    check_bind(host, None, Settings())


def test_token_is_required_and_never_logged(heron_home: Path) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()  # the server binds it itself, as a user's would
    env = heron_env(heron_home) | {"HERON_API_TOKEN": TOKEN}
    proc = start_heron(["serve", "--port", str(port)], env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)  # /health needs no token: probes carry none
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "library.list"}
        missing = httpx.post(f"{url}/rpc", json=rpc)
        wrong = httpx.post(f"{url}/rpc", json=rpc, headers={"authorization": "Bearer nope"})
        right = httpx.post(f"{url}/rpc", json=rpc, headers={"authorization": f"Bearer {TOKEN}"})
        models = httpx.get(f"{url}/v1/models", headers={"authorization": f"Bearer {TOKEN}x"})
        embed = httpx.post(f"{url}/v1/embeddings", json={"model": "m", "input": "hi"})
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert missing.status_code == wrong.status_code == models.status_code == 401
    assert embed.status_code == 401
    # Each door answers in its clients' shape: JSON-RPC on /rpc, OpenAI's on /v1.
    assert missing.json()["error"]["data"]["type"] == "authentication_error"
    assert missing.json()["id"] is None and missing.json()["error"]["code"] == -32600
    assert models.json()["error"]["type"] == "authentication_error"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert right.status_code == 200 and right.json()["result"][0]["name"] == "tiny"
    assert TOKEN not in stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    # SIGTERM stops it gracefully (uvicorn then re-raises the signal: exit status -15).
    assert "Application shutdown complete." in [e["message"] for e in lines]
    requests = [e for e in lines if e["message"] == "request"]
    assert {e["status"] for e in requests} >= {200, 401}
    assert all(e["request_id"] for e in requests)
    assert right.headers["x-request-id"] in {e["request_id"] for e in requests}


def test_serves_on_a_unix_socket(heron_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "heron.sock"
    proc = start_heron(["serve", "--uds", str(path)], heron_env(heron_home))
    try:
        transport = httpx.HTTPTransport(uds=str(path))
        with httpx.Client(transport=transport, base_url="http://heron") as client:
            for _ in range(600):
                if path.exists():
                    break
                assert proc.poll() is None, proc.communicate()[1]
                time.sleep(0.2)
            assert client.get("/health").json() == {"status": "ok"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def test_sigterm_lets_a_running_answer_finish(heron_home: Path) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    proc = start_heron(["serve", "--port", str(port)], heron_env(heron_home))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        body = {"message": "How do I roll back a Deployment?"}
        with httpx.stream("POST", f"{url}/chat/stream", json=body, timeout=120) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("id: ")  # the answer is under way
            proc.send_signal(signal.SIGTERM)
            rest = list(lines)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "event: final" in rest, stderr
    assert "Application shutdown complete." in stderr
