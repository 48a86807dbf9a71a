"""Interventions through a real ``heron serve`` on loopback: JSON-RPC, the room's SSE
stream with ``Last-Event-ID`` resume, outcomes over HTTP, audio files, and a job that
parks at confirmation becoming a card with confirm and deny buttons."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import httpx

from heron.agent import ToolUse
from heron.server import create_app
from heron.server.runtime import Runtime
from heron.settings import Settings
from tests.interventions.conftest import COLLISION
from tests.jobs.conftest import Server, wait_for
from tests.server.conftest import running

CARD_KEYS = {
    "id", "kind", "key", "room", "severity", "text", "spoken", "audio_url", "actions",
    "created_at", "seen_before", "resolved_at", "outcome", "outcome_by",
}  # fmt: skip


def read_events(
    url: str, count: int, headers: dict[str, str] | None = None, timeout: float = 30
) -> list[dict]:
    """The first ``count`` events of a stream (comments skipped), parsed."""
    events: list[dict] = []
    fields: dict[str, str] = {}
    with httpx.stream("GET", url, headers=headers or {}, timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith(":"):
                continue
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            if fields:
                events.append(fields | {"data": json.loads(fields["data"])})
                fields = {}
            if len(events) >= count:
                break
    return events


def in_background(work: Callable[[], list[dict]]) -> Callable[[], list[dict]]:
    found: list[list[dict]] = []
    thread = threading.Thread(target=lambda: found.append(work()), daemon=True)
    thread.start()

    def result() -> list[dict]:
        thread.join(60)
        assert found, "the stream gave too few events"
        return found[0]

    return result


def test_cards_stream_resume_outcomes_and_audio(serve: Callable[[], Server], home: Path) -> None:
    server = serve()
    stream = f"{server.url}/interventions/stream?room=team"
    live = in_background(lambda: read_events(stream, 3))
    collision = {"kind": "collision", "key": "collision:README.md", "room": "team"}
    first = server.result("interventions.raise", **collision, facts=COLLISION, actor="alice")
    again = server.result("interventions.raise", **collision, facts=COLLISION)
    assert (first["status"], again["status"]) == ("delivered", "suppressed_guard")  # type: ignore[index]
    resolved = server.result("interventions.resolve", key="collision:README.md", room="team")
    assert resolved["resolved_at"]  # type: ignore[index]
    critical = server.result(
        "interventions.raise",
        kind="watchdog_incident",
        key="watchdog:api",
        room="team",
        severity="critical",
        facts={"check": "api", "detail": "503"},
    )
    events = live()
    assert [e["event"] for e in events] == ["intervention", "resolved", "intervention"]
    card = events[0]["data"]
    assert set(card) == CARD_KEYS and events[0]["id"] == str(first["id"])  # type: ignore[index]
    assert card["resolved_at"] is card["outcome"] is card["outcome_by"] is None  # still open
    assert card["text"] == "Conflict: alice + bob both on README.md (unpushed)."
    assert "id" not in events[1] and events[1]["data"]["key"] == "collision:README.md"
    assert events[2]["data"]["audio_url"] == critical["audio_url"]  # type: ignore[index]

    resumed = read_events(stream, 1, headers={"last-event-id": str(first["id"])})  # type: ignore[index]
    assert [e["data"]["id"] for e in resumed] == [critical["id"]]  # type: ignore[index]
    assert httpx.get(f"{server.url}/interventions/stream").status_code == 400
    bad = httpx.get(stream, headers={"last-event-id": "x:1"})
    assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["error"]["message"]

    outcome = f"{server.url}/interventions/{first['id']}/outcome"  # type: ignore[index]
    done = httpx.post(outcome, json={"outcome": "accept", "by": "alice"})
    assert done.status_code == 200 and done.json()["outcome_by"] == "alice"
    twice = httpx.post(outcome, json={"outcome": "dismiss", "by": "bob"})
    assert (
        twice.status_code == 400 and "already has its outcome" in twice.json()["error"]["message"]
    )
    assert (
        httpx.post(
            f"{server.url}/interventions/999999/outcome", json={"outcome": "accept"}
        ).status_code
        == 404
    )
    assert httpx.post(outcome, json={"outcome": "maybe"}).status_code == 400
    rpc_twice = server.rpc("interventions.outcome", id=first["id"], outcome="accept", by="x")  # type: ignore[index]
    assert rpc_twice["error"]["code"] == -32001
    unknown = server.rpc("interventions.resolve", key="k", room="nowhere")
    assert (
        unknown["error"]["code"] == -32004
        and "No interventions in room" in unknown["error"]["message"]
    )
    kind = server.rpc("interventions.raise", kind="nope", key="k", room="team")
    assert (
        kind["error"]["code"] == -32001 and "Unknown intervention kind" in kind["error"]["message"]
    )

    audio = httpx.get(server.url + critical["audio_url"])  # type: ignore[index, operator]
    assert audio.status_code == 200 and audio.content[:4] == b"RIFF"
    folder = home / "interventions" / "audio"
    os.symlink(home / "heron.db", folder / "99.wav")
    assert httpx.get(f"{server.url}/interventions/audio/99.wav").status_code == 404
    assert httpx.get(f"{server.url}/interventions/audio/..%2Fheron.db").status_code == 404
    stats = {s["kind"]: s for s in server.result("interventions.stats")["kinds"]}  # type: ignore[index]
    assert stats["collision"]["suppressed_guard"] == 1 and stats["collision"]["accepted"] == 1
    listed = server.result("interventions.list", room="team", active_only=True)
    assert [i["id"] for i in listed] == [critical["id"]]  # type: ignore[index, union-attr]


def test_a_job_waiting_for_confirmation_becomes_a_card(serve: Callable[[], Server]) -> None:
    server = serve()
    stream = f"{server.url}/interventions/stream?room=default"
    # Two pages open on the room: confirming in one resolves the card in both.
    pages = [in_background(lambda: read_events(stream, 2)) for _ in range(2)]
    job = server.result("jobs.create", prompt="deploy the fix", risk_level="deploy_allowed")
    job_id = job["id"]  # type: ignore[index]

    def card() -> list:
        return server.result("interventions.list", room="default", active_only=True)  # type: ignore[return-value]

    (shown,) = wait_for(card, 30, "the job's card")  # type: ignore[misc]
    assert shown["kind"] == "job_waiting" and shown["actions"] == [
        {"label": "Confirm", "method": "jobs.confirm", "params": {"id": job_id}},
        {"label": "Deny", "method": "jobs.deny", "params": {"id": job_id}},
    ]
    # What the page's Confirm does: the server runs the card's own action as alice.
    done = server.result("interventions.act", id=shown["id"], action=0, by="alice")
    assert done["result"]["state"] == "queued"  # type: ignore[index]
    assert (done["intervention"]["outcome"], done["intervention"]["outcome_by"]) == (  # type: ignore[index]
        "accept",
        "alice",
    )
    assert done["intervention"]["resolved_at"]  # type: ignore[index]  # settled from the job
    assert server.result("jobs.get", id=job_id)["confirmed_by"] == "alice"  # type: ignore[index]
    for page in pages:
        events = page()
        assert [e["event"] for e in events] == ["intervention", "resolved"]
        assert events[1]["data"]["key"] == f"job_waiting:{job_id}"
    again = server.rpc("interventions.act", id=shown["id"], action=1, by="bob")
    assert again["error"]["code"] == -32001 and "is over" in again["error"]["message"]


def test_a_failed_jobs_card_says_why_it_failed(configured: Path) -> None:
    with running(create_app(Settings())) as (url, _):
        failed_card(InProcess(url), configured)


class InProcess(Server):
    """A server of this process (``running``), called as ``Server`` calls one."""

    def __init__(self, url: str) -> None:
        self.url = url


def failed_card(server: Server, configured: Path) -> None:
    # Parked first, so the workspace can go before it runs: then it fails.
    job = server.result("jobs.create", prompt="what changed?", requires_confirmation=True)
    job_id = job["id"]  # type: ignore[index]
    wait_for(lambda: server.result("jobs.get", id=job_id)["state"] == "waiting_for_confirmation")  # type: ignore[index]
    configured.rename(configured.with_name("moved"))
    server.result("jobs.confirm", id=job_id, by="alice")

    def card() -> list:
        found = server.result("interventions.list", room="default")
        return [c for c in found if c["kind"] == "job_failed"]  # type: ignore[union-attr]

    (failed,) = wait_for(card, 30, "the failed job's card")  # type: ignore[misc]
    assert "is not a directory" in failed["text"] and "no reason" not in failed["text"]


def test_the_agents_tool_calls_become_collision_and_overlap_cards(home: Path) -> None:
    runtime = Runtime(Settings(interventions={"cooldown": 0}))

    def used(actor: str, name: str, arguments: dict[str, str], ok: bool = True) -> list:
        return runtime.observers.tool_use(actor, ToolUse("1", name, arguments, ok))

    try:
        write = {"path": "backend/voice/livekit.py", "content": "# LiveKit room\nclass Agent:\n"}
        assert used("alice", "write_file", write) == []
        (overlap,) = used("bob", "search_docs", {"query": "how do LiveKit agents join a room"})
        assert overlap.kind == "research_overlap" and overlap.status == "delivered"
        assert overlap.text.startswith("bob is researching how do LiveKit agents join a room")
        (collision,) = used("bob", "write_file", write)
        assert (
            collision.text
            == "Conflict: alice + bob both on backend/voice/livekit.py (uncommitted)."
        )
        assert used("carol", "write_file", write, ok=False) == []  # failed
        assert used("carol", "read_file", write) == []
    finally:
        runtime.close()
