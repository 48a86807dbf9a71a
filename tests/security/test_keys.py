"""Attacks on named API keys: the token is shown once and kept nowhere, a key cannot
reach past its scopes (nor grant itself more), a revoked, forged or half-known token
opens nothing, on a server with or without ``HERON_API_TOKEN``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from heron.cli.app import app as heron_cli
from heron.keys import SHOWN, open_keys
from heron.server import create_app
from heron.server.doors.rpc import FORBIDDEN
from heron.settings import Settings

TOKEN = "admin-token-for-the-keys-attacks-0123456789"


def rpc(client: TestClient, token: str, method: str, params: Any = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return client.post("/rpc", json=body, headers={"authorization": f"Bearer {token}"})


def serve(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings)
    yield TestClient(app, raise_server_exceptions=False)  # no lifespan: no store opened
    app.state.runtime.shared("keys", lambda: None).close()
    app.state.runtime.close()


@pytest.fixture
def client(home: Path) -> Iterator[TestClient]:
    yield from serve(Settings(server={"api_token": TOKEN}))


@pytest.fixture
def open_client(home: Path) -> Iterator[TestClient]:
    """A loopback server without HERON_API_TOKEN."""
    yield from serve(Settings())


def make_key(name: str, *scopes: str) -> str:
    with open_keys(Settings()) as keys:
        return keys.create(name, scopes)[1]


def heron(*args: str) -> Any:
    """The ``heron`` command in this process (a subprocess costs seconds of imports)."""
    return CliRunner().invoke(heron_cli, list(args))


def test_the_token_is_printed_once_and_stored_nowhere(home: Path) -> None:
    made = heron("keys", "create", "ci-bot", "--scope", "read", "--scope", "jobs", "--json")
    token = json.loads(made.stdout)["token"]
    assert token.startswith("hk_") and len(token) >= 40
    listed = heron("keys", "list", "--json")
    assert token not in listed.stdout and token[SHOWN:] not in listed.stdout
    assert json.loads(listed.stdout)[0]["token_starts"] == token[:SHOWN]
    # Neither the database nor its journal holds it: only its hash.
    stored = b"".join(p.read_bytes() for p in home.glob("keys.db*"))
    assert stored and token.encode() not in stored and token[SHOWN:].encode() not in stored
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored
    again = heron("keys", "create", "ci-bot", "--scope", "read")
    assert again.exit_code != 0 and "exists already" in str(again.exception)
    shown = heron("keys", "list").stdout + heron("keys", "usage").stdout
    assert "ci-bot" in heron("keys", "list").stdout and token[SHOWN:] not in shown


def test_a_key_cannot_grant_itself_more(client: TestClient) -> None:
    token = make_key("chatty", "chat", "read")
    for method, params in [
        ("keys.create", {"name": "mine", "scopes": ["admin"]}),
        ("keys.list", {}),
        ("library.add", {"name": "x", "source": "/etc"}),
        ("interventions.raise", {"kind": "k", "key": "k", "room": "r"}),
        ("ops.reload", {}),
    ]:
        answer = rpc(client, token, method, params)
        assert answer.status_code == 403, (method, answer.text)
        assert answer.json()["error"]["code"] == FORBIDDEN
        assert answer.json()["error"]["data"]["scope"] == "admin"
    with open_keys(Settings()) as keys:
        assert [k.name for k in keys.list()] == ["chatty"]


@pytest.mark.parametrize("which", ["server", "open_server"])
def test_revoked_forged_and_half_known_tokens_open_nothing(
    which: str, client: TestClient, open_client: TestClient
) -> None:
    server = client if which == "server" else open_client
    token = make_key("victim", "admin")
    assert rpc(server, token, "library.list").status_code == 200
    half = token[:SHOWN] + ("A" if token[SHOWN] != "A" else "B") + token[SHOWN + 1 :]
    for wrong in [half, token + "x", token[:-1], "hk_", "hk_" + "0" * 43]:
        assert rpc(server, wrong, "library.list").status_code == 401, wrong
    with open_keys(Settings()) as keys:
        keys.revoke("victim")
    for path in ("/v1/models", "/metrics", "/"):
        refused = server.get(path, headers={"authorization": f"Bearer {token}"})
        assert refused.status_code == 401, path
    assert rpc(server, token, "library.list").status_code == 401
