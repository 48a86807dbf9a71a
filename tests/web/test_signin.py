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


def rpc(client: httpx.Client, method: str, **headers: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
    return client.post("/rpc", json=body, headers=headers).json()


def test_a_person_signs_in_with_their_own_key(locked: Heron) -> None:
    """Sign-in per person (issue 47): a named key in the form signs the page in as that
    key: its scopes and its usage, not the token's; revoked, its page is signed out."""
    admin = {"authorization": f"Bearer {TOKEN}"}
    made = httpx.post(
        f"{locked.url}/rpc",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "keys.create",
            "params": {"name": "ana-page", "scopes": ["read", "chat"]},
        },
        headers=admin,
    ).json()["result"]
    with httpx.Client(base_url=locked.url) as client:
        wrong = client.post("/signin", data={"token": made["token"][:-2] + "xx", "next": "/"})
        assert wrong.status_code == 401 and "nor a live key" in wrong.text
        signin = client.post("/signin", data={"token": made["token"], "next": "/"})
        assert signin.status_code == 303
        csrf = client.get("/").text.split('name="heron-csrf" content="')[1].split('"')[0]
        assert "result" in rpc(client, "library.list", **{"x-heron-csrf": csrf})
        refused = rpc(client, "keys.list", **{"x-heron-csrf": csrf})
        assert refused["error"]["code"] == -32010 and "ana-page" in refused["error"]["message"]
        usage = httpx.post(f"{locked.url}/rpc", json=RPC | {"method": "keys.usage"}, headers=admin)
        (mine,) = [u for u in usage.json()["result"] if u["name"] == "ana-page"]
        assert mine["requests"] >= 2  # the page's calls are hers
        httpx.post(
            f"{locked.url}/rpc",
            json=RPC | {"method": "keys.revoke", "params": {"name": "ana-page"}},
            headers=admin,
        )
        gone = client.post("/rpc", json=RPC, headers={"x-heron-csrf": csrf})
        assert gone.status_code == 401 and "signed in with was revoked" in gone.text


def test_a_person_signed_in_on_the_chat_joins_its_rooms_roster(locked: Heron, page) -> None:  # type: ignore[no-untyped-def]
    """People (issue 49): the chat page signed in with a named key puts its person in the
    conversation's room roster (on the page channel), keeping a channel already set."""
    admin = {"authorization": f"Bearer {TOKEN}"}

    def call(method: str, **params: object) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx.post(f"{locked.url}/rpc", json=body, headers=admin).json()

    made = call("keys.create", name="bo-chat", scopes=["read", "chat"])["result"]
    call("people.join", room="ops-chat", person="cy", channel="json://127.0.0.1:9/cy")
    page.goto(locked.url + "/signin")
    page.fill("#token", made["token"])
    page.keyboard.press("Enter")
    page.wait_for_url(f"{locked.url}/")
    page.goto(locked.url + "/?room=ops-chat")
    page.locator(".talk[data-cards=open]").wait_for()
    roster = call("people.list", room="ops-chat")["result"]
    assert [(m["person"], m["channel"]) for m in roster] == [
        ("bo-chat", "page"),
        ("cy", "json://127.0.0.1:9/cy"),
    ]
    # As herself, the key may join and leave; as another, or with a URL, it may not.
    page_csrf = page.locator('meta[name="heron-csrf"]').get_attribute("content")
    for params in ({"person": "cy"}, {"person": "bo-chat", "channel": "json://127.0.0.1:9/x"}):
        refused = page.request.post(
            f"{locked.url}/rpc",
            data={"jsonrpc": "2.0", "id": 1, "method": "people.join",
                  "params": {"room": "ops-chat", **params}},
            headers={"x-heron-csrf": page_csrf or ""},
        ).json()  # fmt: skip
        assert refused["error"]["code"] == -32010, refused
    assert not [e for e in page.errors if "401" not in e], page.errors
