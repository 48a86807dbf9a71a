"""No cost or change from a cross-site request: a browser marks each request with Fetch
Metadata (``Sec-Fetch-Site``), and another site's page gets a 403 on every route but the
static assets and a top-level navigation, Origin or not (``<img src=...>`` sends none).
A ``GET`` (which a navigation may be) never calls a model, starts a program or writes.

The program here is a real MCP server command that leaves a file behind when started: the
doctor's online checks start it, the offline ones must not.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.server import create_app
from heron.settings import Settings
from tests.security.served import bare_home
from tests.security.test_http import ROUTES
from tests.server.conftest import running

#: The edge needs a server, not data: a home with nothing indexed.
heron_home = bare_home

#: What a browser sends for ``<img src=...>`` on another site's page.
IMAGE = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"}
#: ... for that page's ``fetch()`` (an Origin goes with it, but only for some methods).
FETCH = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty"}
#: ... for a link on another site followed to here: a top-level navigation.
NAVIGATE = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate",
            "sec-fetch-dest": "document", "sec-fetch-user": "?1"}  # fmt: skip


@pytest.fixture(scope="module")
def marker(heron_home: Path) -> Path:
    return heron_home / "mcp-started"


@pytest.fixture(scope="module")
def site(heron_home: Path, marker: Path) -> Iterator[str]:
    """A server whose one MCP server is a program that writes ``marker`` when started."""
    config = heron_home / "mcp-marker.json"
    code = f"open({str(marker)!r}, 'w').close()"
    config.write_text(json.dumps({"mcpServers": {"probe": {"command": sys.executable,
                                                           "args": ["-c", code]}}}))  # fmt: skip
    settings = Settings(tools={"mcp_config": config, "mcp_timeout": 5})
    with running(create_app(settings)) as (url, _):
        yield url


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize("kind", ["image", "fetch", "same-site", "garbled"])
def test_another_sites_request_is_refused_on_every_route(
    site: str, marker: Path, kind: str, method: str, path: str, body: Any
) -> None:
    headers = {
        "image": IMAGE,
        "fetch": FETCH,
        "same-site": FETCH | {"sec-fetch-site": "same-site"},  # another port of 127.0.0.1
        "garbled": FETCH | {"sec-fetch-site": "Cross-Site?"},  # what no browser sends
    }[kind]
    response = httpx.request(method, f"{site}{path}", json=body, headers=headers)
    if path.startswith("/static/"):
        assert response.status_code == 200  # the page's own scripts are public
        return
    assert response.status_code == 403, (method, path, response.text)
    error = response.json()["error"]  # in the route's shape: JSON-RPC's or OpenAI's
    assert (error.get("data") or error)["type"] == "cross_site_refused"
    assert (
        "Sec-Fetch-Site" in error["message"] and "HERON_SERVER_ALLOWED_ORIGINS" in error["message"]
    )
    assert not marker.exists()


def test_the_image_tag_of_the_issue_costs_nothing(site: str, marker: Path) -> None:
    refused = httpx.get(f"{site}/doctor?offline=0", headers=IMAGE)
    assert refused.status_code == 403 and not marker.exists()
    # A link to it, followed (a navigation passes the rule): still no online run.
    followed = httpx.get(f"{site}/doctor?offline=0", headers=NAVIGATE)
    assert followed.status_code == 400 and "POST /doctor" in followed.json()["error"]["message"]
    assert not marker.exists()
    # The online checks are a POST's: a client that is no browser (no Fetch Metadata).
    online = httpx.post(f"{site}/doctor?offline=0&check=mcp", json={}, timeout=60)
    assert online.json()["checks"][0]["name"] == "mcp"
    assert marker.exists()  # the probe can tell: the online check started the program
    marker.unlink()


def test_a_navigation_and_the_own_pages_are_served(site: str) -> None:
    assert httpx.get(f"{site}/libraries", headers=NAVIGATE).status_code == 200
    own = {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty"}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "library.list"}
    assert httpx.post(f"{site}/rpc", json=rpc, headers=own).status_code == 200
    typed = NAVIGATE | {"sec-fetch-site": "none"}  # typed into the address bar
    assert httpx.get(f"{site}/", headers=typed).status_code == 200
    # A navigation is a GET: a form another site posts here is not one.
    assert httpx.post(f"{site}/rpc", json=rpc, headers=NAVIGATE).status_code == 403


def test_same_site_pages_pass_only_when_allowed(heron_home: Path) -> None:
    headers = FETCH | {"sec-fetch-site": "same-site"}
    with running(create_app(Settings(server={"allow_same_site": True}))) as (url, _):
        assert httpx.get(f"{url}/v1/models", headers=headers).status_code == 200
        assert httpx.get(f"{url}/v1/models", headers=FETCH).status_code == 403


def test_get_doctor_writes_nothing_to_the_store(site: str, heron_home: Path) -> None:
    # data_version changes for this connection whenever another one commits a write.
    db = sqlite3.connect(heron_home / "home" / "heron.db")
    try:
        before = db.execute("PRAGMA data_version").fetchone()[0]
        report = httpx.get(f"{site}/doctor?check=store", timeout=60)
        assert report.json()["checks"][0]["status"] == "ok", report.text
        assert db.execute("PRAGMA data_version").fetchone()[0] == before
        posted = httpx.post(f"{site}/doctor?check=store", json={}, timeout=60)  # the write check
        assert posted.json()["checks"][0]["status"] == "ok"
        assert db.execute("PRAGMA data_version").fetchone()[0] != before
    finally:
        db.close()


#: The request an MCP client opens a session with.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def test_a_page_on_another_port_starts_no_mcp_session(
    heron_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 45: an ``<img src=http://127.0.0.1:8765/mcp>`` on a page at another port of
    the host (a browser calls it same-site, sends no Origin, and sends the sign-in
    cookie, ``SameSite=Strict`` or not) started an MCP session where same-site pages
    were allowed; a link to /mcp followed from there did, allowed or not."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    started: list[int] = []
    admit = StreamableHTTPSessionManager._admit_session

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(1)  # the SDK's one door to a new session (and its server task)
        return admit(self, *args, **kwargs)

    monkeypatch.setattr(StreamableHTTPSessionManager, "_admit_session", counted)
    other_port = "http://127.0.0.1:9/page.html"
    attacks = {
        "image": IMAGE | {"sec-fetch-site": "same-site", "referer": other_port},
        "link": NAVIGATE | {"sec-fetch-site": "same-site", "referer": other_port},
        "typed": NAVIGATE | {"sec-fetch-site": "none"},
        "no fetch metadata": {"referer": other_port},  # a browser that sends none
    }
    for allow in (True, False):
        with running(create_app(Settings(server={"allow_same_site": allow}))) as (url, _):
            for attack, headers in attacks.items():
                answer = httpx.get(f"{url}/mcp", headers=headers | {"accept": "text/event-stream"})
                assert answer.status_code == 403, (allow, attack, answer.text)
                error = answer.json()["error"]
                assert error["type"] == "cross_site_refused" and "MCP" in error["message"]
            assert started == [], (allow, started)
            # Heron's own pages, and clients that are no browser, still open sessions.
            mcp = {"accept": "application/json, text/event-stream"}
            own = mcp | {"sec-fetch-site": "same-origin", "origin": url, "referer": f"{url}/"}
            for headers in (own, mcp):
                opened = httpx.post(f"{url}/mcp", json=INITIALIZE, headers=headers)
                assert opened.status_code == 200, opened.text
            assert len(started) == 2
            started.clear()
