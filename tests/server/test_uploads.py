"""Files added over HTTP: ``POST /upload/{library}`` (multipart, JSON or events) and the
JSON-RPC ``library.add_files`` / ``library.remove_file`` of a real server on loopback,
with its keys, contexts, Host and Origin checks and body bounds."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from heron.keys import open_keys
from heron.libraries import add_library, index_library
from heron.server import create_app
from heron.settings import Settings
from heron.store import open_store
from tests.libraries.conftest import write_pages
from tests.server.conftest import heron_env, running

VPN = b"# VPN\n\nThe VPN password rotates every 90 days; the help desk resets it.\n"
LUNCH = b"# Lunch\n\nThe canteen opens at noon on weekdays.\n"
FAKE_PDF = b"%PDF-1.7\n\x00\x01\x02 binary"
MAX_FILES = 4
MAX_BYTES = 200_000


@dataclass
class Server:
    url: str
    tmp: Path
    tokens: dict[str, str]

    def post(self, path: str, who: str | None = None, **kw: Any) -> httpx.Response:
        headers = kw.pop("headers", {})
        if who:
            headers["authorization"] = f"Bearer {self.tokens[who]}"
        return httpx.post(f"{self.url}{path}", headers=headers, timeout=120, **kw)

    def rpc(self, method: str, params: dict[str, Any], who: str | None = None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer: dict[str, Any] = self.post("/rpc", who, json=body).json()
        return answer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("uploads")
    with pytest.MonkeyPatch.context() as mp:
        env = heron_env(tmp) | {
            "HERON_LIBRARY_ROOTS": json.dumps([str(tmp)]),
            "HERON_LIBRARY_UPLOAD_MAX_FILES": str(MAX_FILES),
            "HERON_LIBRARY_UPLOAD_MAX_BYTES": str(MAX_BYTES),
        }
        for name, value in env.items():
            mp.setenv(name, value)
        for name in ("HERON_CONFIG", "HERON_API_TOKEN", "HERON_CONTEXT"):
            mp.delenv(name, raising=False)
        contexts = {n: {"libraries_file": str(tmp / f"{n}.txt")} for n in ("alpha", "beta")}
        settings = Settings(contexts=contexts)
        alpha = settings.in_context("alpha")
        add_library("docs", str(write_pages(tmp / "docs", {"lunch.md": LUNCH.decode()})), settings)
        add_library("alpha-docs", str(write_pages(tmp / "alpha", {"a.md": "# A\n\nA.\n"})), alpha)
        add_library("remote", "https://github.com/kubernetes/website.git", settings)
        with open_store(settings) as store:
            assert index_library("docs", store, settings=settings).error is None
        with open_keys(settings) as keys:
            tokens = {
                name: keys.create(name, scopes, context=context)[1]
                for name, scopes, context in (
                    ("reader", ("read",), None),
                    ("alpha-admin", ("admin",), "alpha"),
                    ("beta-admin", ("admin",), "beta"),
                )
            }
        with running(create_app(settings)) as (url, _):
            yield Server(url, tmp, tokens)


def files(*pairs: tuple[str, bytes]) -> list[tuple[str, tuple[str, bytes, str]]]:
    return [("file", (name, data, "application/octet-stream")) for name, data in pairs]


def events(body: str) -> list[tuple[str, dict[str, Any]]]:
    """An event stream's ``(event, data)`` pairs, in order."""
    out = []
    for block in body.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            out.append((lines.get("event", "message"), json.loads(lines["data"])))
    return out


def test_multipart_adds_files_and_names_each_refused_one(server: Server) -> None:
    reply = server.post(
        "/upload/docs",
        files=files(("vpn.md", VPN), ("scan.md", FAKE_PDF)),
        data={"folder": "it"},
    )
    assert reply.status_code == 200, reply.text
    report = reply.json()
    assert [(f["path"], f["ok"]) for f in report["files"]] == [("it/vpn.md", True), (None, False)]
    assert report["files"][1]["error"].startswith("scan.md: it is a PDF, not UTF-8 text")
    assert report["index"]["added"] == 1 and report["index"]["pages"] == 2
    assert (server.tmp / "docs" / "it" / "vpn.md").read_bytes() == VPN
    found = server.rpc("search.query", {"query": "how often does the VPN password rotate"})
    assert found["result"][0]["page"] == "it/vpn"


def test_an_event_stream_reports_files_stages_then_the_report(server: Server) -> None:
    reply = server.post(
        "/upload/docs",
        files=files(("holidays.md", b"# Holidays\n\nThe office closes on the first of May.\n")),
        headers={"accept": "text/event-stream"},
    )
    assert reply.status_code == 200 and reply.headers["content-type"].startswith(
        "text/event-stream"
    )
    seen = events(reply.text)
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "file" and kinds[-1] == "done" and "stage" in kinds
    assert seen[0][1]["path"] == "holidays.md" and seen[0][1]["ok"]
    stages = [data for kind, data in seen if kind == "stage"]
    assert {s["name"] for s in stages} >= {"pages", "chunks"}
    chunks = [s for s in stages if s["name"] == "chunks"]
    assert chunks[-1]["done"] == chunks[-1]["total"]
    assert seen[-1][1]["index"]["added"] == 1


def test_json_rpc_adds_in_base64_and_removes(server: Server) -> None:
    parking = base64.b64encode(b"# Parking\n\nLevel -2.\n").decode()
    params = {"name": "docs", "files": [{"name": "parking.md", "content": parking}]}
    added = server.rpc("library.add_files", params)["result"]
    assert added["added"] == 1 and (server.tmp / "docs" / "parking.md").exists()
    bad = server.rpc(
        "library.add_files", {"name": "docs", "files": [{"name": "x.md", "content": "%%"}]}
    )
    assert (
        bad["error"]["code"] == -32001
        and "x.md: its content is not base64" in bad["error"]["message"]
    )
    removed = server.rpc("library.remove_file", {"name": "docs", "path": "parking.md"})["result"]
    assert removed["page"] == "parking" and removed["index"]["removed"] == 1
    assert not (server.tmp / "docs" / "parking.md").exists()
    gone = server.rpc("library.remove_file", {"name": "docs", "path": "parking.md"})
    assert gone["error"]["code"] == -32004  # fmt: skip


def test_bounds_refuse_the_whole_request_before_writing(server: Server) -> None:
    many = files(*((f"n{n}.md", LUNCH) for n in range(MAX_FILES + 1)))
    reply = server.post("/upload/docs", files=many)
    assert reply.status_code == 400
    assert "HERON_LIBRARY_UPLOAD_MAX_FILES" in reply.json()["error"]["message"]
    assert not (server.tmp / "docs" / "n0.md").exists()
    heavy = files(("a.md", b"# A\n" + b"a " * 60_000), ("b.md", b"# B\n" + b"b " * 60_000))
    reply = server.post("/upload/docs", files=heavy)
    assert reply.status_code == 400 and "HERON_LIBRARY_UPLOAD_MAX_BYTES" in reply.text
    huge = files(("h.md", b"# H\n" + b"h " * 700_000))  # past the files and their framing
    reply = server.post("/upload/docs", files=huge)
    assert reply.status_code == 413 and "HERON_LIBRARY_UPLOAD_MAX_BYTES" in reply.text
    reply = server.post("/upload/docs", content=b"{}", headers={"content-type": "application/json"})
    assert reply.status_code == 400 and "multipart/form-data" in reply.text
    reply = server.post("/upload/remote", files=files(("a.md", LUNCH)))
    assert reply.status_code == 400 and "git repository" in reply.text


def test_only_admin_keys_of_the_library_s_context_may_add(server: Server) -> None:
    reply = server.post("/upload/docs", "reader", files=files(("r.md", LUNCH)))
    assert reply.status_code == 403 and "needs scope admin" in reply.text
    refused = server.rpc("library.add_files", {"name": "docs", "files": []}, "reader")
    assert refused["error"]["code"] == -32010
    reply = server.post("/upload/alpha-docs", "beta-admin", files=files(("b.md", LUNCH)))
    assert reply.status_code == 404 and "No library 'alpha-docs'" in reply.text
    gone = server.rpc("library.remove_file", {"name": "alpha-docs", "path": "a.md"}, "beta-admin")
    assert gone["error"]["code"] == -32004
    reply = server.post("/upload/alpha-docs", files=files(("b.md", LUNCH)))  # the default context
    assert reply.status_code == 404
    assert not (server.tmp / "alpha" / "b.md").exists() and (server.tmp / "alpha" / "a.md").exists()
    reply = server.post("/upload/alpha-docs", "alpha-admin", files=files(("b.md", LUNCH)))
    assert reply.status_code == 200 and (server.tmp / "alpha" / "b.md").exists()


def test_browsers_reach_it_from_heron_s_own_pages_only(server: Server) -> None:
    for headers in (
        {"origin": "http://evil.example"},
        {"sec-fetch-site": "same-site", "sec-fetch-mode": "cors"},
        {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"},
        {"host": "evil.example"},
    ):
        reply = server.post("/upload/docs", files=files(("e.md", LUNCH)), headers=headers)
        assert reply.status_code in (403, 421), (headers, reply.text)
    assert not (server.tmp / "docs" / "e.md").exists()
    own = {"sec-fetch-site": "same-origin", "origin": server.url}
    reply = server.post("/upload/docs", files=files(("e.md", LUNCH)), headers=own)
    assert reply.status_code == 200, reply.text


def test_a_new_folder_library_is_made_in_the_caller_s_context(server: Server) -> None:
    made = server.rpc("library.create", {"name": "alpha-new"}, "alpha-admin")["result"]
    assert made["source"] == str(server.tmp / "alpha-new")
    reply = server.post("/upload/alpha-new", "alpha-admin", files=files(("n.md", LUNCH)))
    assert reply.status_code == 200 and (server.tmp / "alpha-new" / "n.md").exists()
    assert server.rpc("library.list", {}, "beta-admin")["result"] == []  # alpha's alone
    again = server.rpc("library.create", {"name": "alpha-new"}, "beta-admin")["error"]
    assert again["code"] == -32001 and "exists already" in again["message"]
    refused = server.rpc("library.create", {"name": "x"}, "reader")["error"]
    assert refused["code"] == -32010
