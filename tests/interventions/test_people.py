"""People (issue 49) through a real server (uvicorn on loopback): a room's roster, an
activity report (what a person edits or reads outside Heron) that becomes a research
overlap card, and the card's Ping delivered to the named teammate's own channel (a real
loopback webhook, through apprise) and to no one else's: not another teammate's, not the
server's alert channels. A teammate on the page gets the card alone; one not in the
roster is refused, naming the fix."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from heron.libraries import add_library, index_library
from heron.server import create_app
from heron.settings import Settings
from heron.store import open_store
from tests.interventions.test_service import Recorder, listener  # noqa: F401 (the webhook)
from tests.libraries.conftest import PAGES, write_pages
from tests.server.conftest import running

ROOM = "voice-team"


@pytest.fixture
def server(home: Path, listener: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:  # noqa: F811
    monkeypatch.setenv("HERON_INTERVENTIONS_ALERT_URLS", json.dumps([f"json://{listener}/alerts"]))
    monkeypatch.setenv("HERON_INTERVENTIONS_COOLDOWN", "0")
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    settings = Settings()
    add_library("tiny", str(write_pages(home / "tiny", PAGES)), settings)
    with open_store(settings) as store:
        assert index_library("tiny", store, settings=settings).error is None
    with running(create_app(settings)) as (url, _):
        yield url


def rpc(url: str, method: str, **params: object) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(f"{url}/rpc", json=body, timeout=60).json()


def result(url: str, method: str, **params: object) -> object:
    answer = rpc(url, method, **params)
    assert "result" in answer, answer
    return answer["result"]


def test_a_ping_reaches_the_named_teammates_channel_and_no_one_elses(
    server: str,
    listener: str,  # noqa: F811
) -> None:
    result(server, "people.join", room=ROOM, person="bob", channel=f"json://{listener}/bob")
    result(server, "people.join", room=ROOM, person="carol", channel=f"json://{listener}/carol")
    result(server, "people.join", room=ROOM, person="dave")  # the page: the card alone
    roster = result(server, "people.list", room=ROOM)
    assert [(m["person"], m["channel"]) for m in roster] == [  # type: ignore[union-attr]
        ("bob", f"json://{listener}/bob"),
        ("carol", f"json://{listener}/carol"),
        ("dave", "page"),
    ]
    # alice edits a file in her editor; bob reads about its topic in his browser.
    edit = {"path": "backend/voice/livekit.py", "headings": ["LiveKit room"]}
    assert result(server, "people.activity", room=ROOM, person="alice", kind="edit", **edit) == []
    read = {"text": "Joining a LiveKit room from a voice agent"}
    (card,) = result(server, "people.activity", room=ROOM, person="bob", kind="read", **read)  # type: ignore[misc]
    assert card["kind"] == "research_overlap" and card["room"] == ROOM, card
    assert card["actions"][0]["label"] == "Ping bob"
    # alice clicks Ping on the card: bob's webhook, and only it, gets the message.
    done = result(server, "interventions.act", id=card["id"], action=0, by="alice")
    ping = done["result"]  # type: ignore[index]
    assert ping["kind"] == "ping" and ping["room"] == ROOM
    deadline = time.monotonic() + 30
    while not Recorder.received and time.monotonic() < deadline:
        time.sleep(0.05)
    (hook,) = Recorder.received
    assert hook["path"] == "/bob" and "alice asks bob to sync up" in hook["body"]["message"]
    stored = result(server, "interventions.list", room=ROOM)
    (sent,) = [i for i in stored if i["id"] == ping["id"]]  # type: ignore[union-attr]
    messages = [d for d in sent["deliveries"] if d["channel"] == "message"]
    assert [d["ok"] for d in messages] == [True]
    # dave is on the page: the card is his ping, and no webhook hears of it.
    to_dave = result(server, "interventions.ping_teammate", room=ROOM, teammate="dave",
                     about="livekit.py", by="alice")  # fmt: skip
    assert to_dave["kind"] == "ping" and to_dave["status"] == "delivered"  # type: ignore[index]
    time.sleep(0.5)  # a message would have gone within this on loopback
    assert [r["path"] for r in Recorder.received] == ["/bob"]
    # Someone not in the roster is not pinged through any channel.
    error = rpc(
        server, "interventions.ping_teammate", room=ROOM, teammate="erin", about="x", by="a"
    )
    assert error["error"]["code"] == -32004 and "people.join" in error["error"]["message"]
    assert [r["path"] for r in Recorder.received] == ["/bob"]


def test_an_activity_report_is_bounded_and_checked(server: str) -> None:
    error = rpc(server, "people.activity", room=ROOM, person="alice", kind="edit")
    assert error["error"]["code"] == -32001 and "path" in error["error"]["message"]
    long = rpc(server, "people.activity", room=ROOM, person="a", kind="read", text="x" * 3000)
    assert long["error"]["code"] == -32602  # over 2,000 characters: refused, not cut
    bad = rpc(server, "people.join", room=ROOM, person="bob", channel="nope://x")
    assert bad["error"]["code"] != 0 and "apprise" in bad["error"]["message"]


def test_a_card_raised_during_a_turn_is_in_its_stream_and_its_answer(server: str) -> None:
    # alice edits the Pods page; bob's and carol's questions about it overlap her work.
    edit = {"path": "concepts/pods.md", "headings": ["Pods", "Pod lifecycle"]}
    result(server, "people.activity", room="pods-team", person="alice", kind="edit", **edit)
    asked = {"message": "Pods: the Pod lifecycle", "answer": "extractive"}
    events, fields = [], {}
    body = asked | {"user": "bob", "room": "pods-team"}  # the conversation's room
    with httpx.stream("POST", f"{server}/chat/stream", json=body, timeout=60) as reply:
        for line in reply.iter_lines():
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            if fields.get("event"):
                events.append((fields["event"], json.loads(fields["data"])))
                if fields["event"] in ("final", "error"):
                    break
            fields = {}
    cards = [data for name, data in events if name == "intervention"]
    assert [c["kind"] for c in cards] == ["research_overlap"], events
    assert cards[0]["room"] == "pods-team" and "audio_url" in cards[0]
    assert [name for name, _ in events].index("intervention") < len(events) - 1  # before final
    answer = result(server, "agent.chat", **asked, user="carol", room="pods-team")
    (card,) = answer["interventions"]  # type: ignore[index]
    assert card["kind"] == "research_overlap" and "carol" in card["text"]
    # The room's own history has both; the default room, neither.
    kinds = [i["kind"] for i in result(server, "interventions.list", room="pods-team")]  # type: ignore[union-attr]
    assert kinds.count("research_overlap") == 2
    assert result(server, "interventions.list", room="default") == []
