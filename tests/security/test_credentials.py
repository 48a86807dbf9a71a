"""Credentials people can trust: wrong tokens are slowed, then refused (429 with
``Retry-After``) per client; a token short enough to guess stops the server at start; the
web page's cookie is a server-side session, not the token, and signing out ends it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from heron.cli.app import app
from heron.cli.server import token
from heron.errors import ConfigError
from heron.server import create_app
from heron.settings import MIN_TOKEN, Settings
from tests.security.served import bare_home
from tests.server.conftest import running

#: The edge needs a server, not data: a home with nothing indexed.
heron_home = bare_home

TOKEN = "credentials-test-token-0123456789abcdef"
RPC = {"jsonrpc": "2.0", "id": 1, "method": "library.list"}
FAILURES = 3
DELAY = 0.2


@pytest.fixture(scope="module")
def locked(heron_home: Path) -> Iterator[str]:
    settings = Settings(server={"api_token": TOKEN, "auth_failures": FAILURES, "auth_delay": DELAY})
    with running(create_app(settings)) as (url, _):
        yield url


def client_at(address: str) -> httpx.Client:
    """A client connecting from ``address`` (any of 127.0.0.0/8 reaches the server)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_wrong_tokens_are_slowed_then_refused_per_client(locked: str) -> None:
    with client_at("127.0.0.2") as guesser, client_at("127.0.0.3") as other:
        for n in range(FAILURES):
            started = time.perf_counter()
            wrong = guesser.post(f"{locked}/rpc", json=RPC, headers=bearer(f"guess-{n}"))
            assert wrong.status_code == 401
            assert time.perf_counter() - started >= DELAY  # each guess costs the guesser
        refused = guesser.post(f"{locked}/rpc", json=RPC, headers=bearer("guess-next"))
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json()["error"]["data"]["type"] == "rate_limited"
        # Until the window has room, even the right token is refused: a right guess among
        # the refused ones must not stand out.
        right = guesser.post(f"{locked}/rpc", json=RPC, headers=bearer(TOKEN))
        assert right.status_code == 429
        # Another client is not locked out by this one.
        assert other.post(f"{locked}/rpc", json=RPC, headers=bearer(TOKEN)).status_code == 200
        # On /v1 too, in OpenAI's shape.
        v1 = guesser.get(f"{locked}/v1/models", headers=bearer("guess"))
        assert v1.status_code == 429 and v1.json()["error"]["type"] == "rate_limited"


def test_wrong_sign_ins_are_throttled_too(locked: str) -> None:
    with client_at("127.0.0.4") as guesser:
        for n in range(FAILURES):
            wrong = guesser.post(f"{locked}/signin", data={"token": f"guess-{n}"})
            assert wrong.status_code == 401
        refused = guesser.post(f"{locked}/signin", data={"token": TOKEN})
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "set-cookie" not in refused.headers


def test_the_cookie_is_a_session_and_sign_out_ends_it(locked: str) -> None:
    with client_at("127.0.0.5") as browser:
        signin = browser.post(f"{locked}/signin", data={"token": TOKEN, "next": "/jobs"})
        assert signin.status_code == 303 and signin.headers["location"] == "/jobs"
        cookie = browser.cookies["heron_session"]
        assert TOKEN not in signin.headers["set-cookie"] and TOKEN not in cookie
        assert browser.get(f"{locked}/v1/models").status_code == 200
        page = browser.get(f"{locked}/jobs")
        csrf = page.text.split('name="heron-csrf" content="')[1].split('"')[0]
        posted = browser.post(f"{locked}/rpc", json=RPC, headers={"x-heron-csrf": csrf})
        assert posted.status_code == 200
        browser.post(f"{locked}/signout")
    # The cookie, copied before sign-out, opens nothing after it.
    with client_at("127.0.0.5") as thief:
        thief.cookies.set("heron_session", cookie)
        assert thief.get(f"{locked}/v1/models").status_code == 401
        assert thief.get(f"{locked}/jobs").status_code == 303  # to the sign-in form
        assert (
            thief.post(f"{locked}/rpc", json=RPC, headers={"x-heron-csrf": csrf}).status_code == 401
        )
    # Nor does a session id with a signature of someone's making, nor the token itself.
    sid = cookie.partition(".")[0]
    for forged in (f"{sid}.{'0' * 64}", TOKEN, f"{sid}.", ".", ""):
        with client_at("127.0.0.6") as forger:
            forger.cookies.set("heron_session", forged)
            assert forger.get(f"{locked}/v1/models").status_code == 401


def test_a_form_that_is_no_sign_in_form_is_a_400(locked: str) -> None:
    fields = "&".join(f"f{n}=x" for n in range(50))
    with client_at("127.0.0.7") as client:
        response = client.post(
            f"{locked}/signin",
            content=fields,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
    assert response.status_code == 400


@pytest.mark.parametrize("token", ["x", "short-token", "y" * (MIN_TOKEN - 1), " " + "z" * 20])
def test_a_short_token_is_refused_at_start(token: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings(server={"api_token": token})
    message = str(refused.value)
    assert "api_token" in message and f"shorter than {MIN_TOKEN}" in message
    assert "secrets.token_urlsafe(32)" in message and "heron token" in message
    assert token.strip() not in message  # the value is never echoed


def test_heron_serve_says_how_to_make_a_token(
    heron_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    token()  # heron token
    made = capsys.readouterr().out.strip()
    assert (
        len(made) >= MIN_TOKEN and Settings(server={"api_token": made}).server.api_token is not None
    )
    monkeypatch.setenv("HERON_API_TOKEN", "letmein")
    # The real command, in process; a socket it cannot bind, so a token it took would
    # end in another error rather than a server that runs.
    with pytest.raises(SystemExit) as done:
        app(["serve", "--uds", str(heron_home / "no-such-dir" / "heron.sock")], prog_name="heron")
    stderr = capsys.readouterr().err
    assert done.value.code == 1 and "Traceback" not in stderr
    assert "HERON_API_TOKEN" in stderr and "heron token" in stderr
