"""With ``HERON_API_TOKEN`` set: the sign-in form in a real browser, the HttpOnly
SameSite=Strict cookie, and the CSRF rule (the cookie alone authorises no POST)."""

from __future__ import annotations

from pathlib import Path
from shutil import copytree

import httpx
import pytest

from tests.web.conftest import Heron

TOKEN = "web-test-token-5d1e9a-0123456789abcdef"
RPC = {"jsonrpc": "2.0", "id": 1, "method": "library.list"}


@pytest.fixture(scope="module")
def locked(web_home: Path, serve, tmp_path_factory: pytest.TempPathFactory) -> Heron:  # type: ignore[no-untyped-def]
    """A server with a token, over a copy of the shared home (its own jobs and store)."""
    root = tmp_path_factory.mktemp("web-token")
    copytree(web_home, root, dirs_exist_ok=True, ignore=lambda *_: ["serve-*.log"])
    return serve(root, token=TOKEN)


def test_sign_in_with_the_token_in_the_page(locked: Heron, page, shoot) -> None:  # type: ignore[no-untyped-def]
    page.goto(locked.url + "/libraries")
    assert page.url == f"{locked.url}/signin?next=/libraries"
    shoot("signin")
    page.fill("#token", "not-the-token")
    page.keyboard.press("Enter")
    page.get_by_role("alert").filter(has_text="not the server's token").wait_for()
    page.fill("#token", TOKEN)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{locked.url}/libraries")
    page.locator("#libs th", has_text="tiny").first.wait_for()  # JSON-RPC through the cookie
    cookie = next(c for c in page.context.cookies() if c["name"] == "heron_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert page.evaluate("() => document.cookie") == ""  # scripts cannot read it
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{locked.url}/signin")
    page.goto(locked.url + "/")
    assert page.url.startswith(f"{locked.url}/signin")
    assert not [e for e in page.errors if "401" not in e], page.errors


def test_the_cookie_alone_authorises_no_post(locked: Heron) -> None:
    with httpx.Client(base_url=locked.url) as client:
        assert client.post("/rpc", json=RPC).status_code == 401
        assert client.get("/").status_code == 303  # a page: to the sign-in form
        signin = client.post("/signin", data={"token": TOKEN, "next": "https://evil.example/"})
        assert signin.status_code == 303 and signin.headers["location"] == "/"
        assert "HttpOnly" in signin.headers["set-cookie"]
        assert "SameSite=strict" in signin.headers["set-cookie"].replace("Strict", "strict")
        page = client.get("/")
        assert page.status_code == 200
        csrf = page.text.split('name="heron-csrf" content="')[1].split('"')[0]
        assert len(csrf) == 64 and TOKEN not in page.text
        assert client.post("/rpc", json=RPC).status_code == 401  # cookie, no CSRF header
        bad = client.post("/rpc", json=RPC, headers={"x-heron-csrf": "0" * 64})
        assert bad.status_code == 401
        good = client.post("/rpc", json=RPC, headers={"x-heron-csrf": csrf})
        assert good.status_code == 200 and good.json()["result"]
        assert client.get("/v1/models").status_code == 200  # GET: the cookie is enough
        cross = client.post(
            "/rpc", json=RPC, headers={"x-heron-csrf": csrf, "origin": "http://evil.example"}
        )
        assert cross.status_code == 403  # and another site's page never gets this far
    with httpx.Client(base_url=locked.url) as other:
        other.cookies.set("heron_session", "guess")
        assert other.get("/v1/models").status_code == 401
    bearer = httpx.post(f"{locked.url}/rpc", json=RPC, headers={"authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200  # API clients are unchanged
