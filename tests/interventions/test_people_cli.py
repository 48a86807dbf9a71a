"""The real ``heron people`` command (issue 49: the library and the CLI mirror each other):
a room's roster (join, list, leave), activity reported to the home's running ``heron
serve`` (a real subprocess) that becomes a research-overlap card, and a ping that reaches
the named teammate's own channel (a real loopback webhook) and no one else's; errors
that say what to do next: no server to report to, a report the server refuses, a
teammate not in the roster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.cli.people import ACTIVITY_KINDS, people_app
from heron.wiring import ActivityReport
from tests.interventions.test_service import Recorder, listener  # noqa: F401 (the webhook)
from tests.server.conftest import free_socket, wait_healthy

ROOM = "voice-team"
DOCS = Path(__file__).parents[2] / "docs" / "interventions.md"
EDIT = ["--path", "backend/voice/livekit.py", "--heading", "LiveKit room"]
#: An environment variable that is no setting: the command's fingerprint differs from the
#: server's, so no server of the home takes it (heron.discovery.fingerprint).
ASIDE = {"HERON_TEST_ASIDE": "1"}


def heron(*args: str, ok: bool = True, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "heron", "people", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
    )
    if not ok:
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        return done.stderr
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


@pytest.fixture
def served(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This home's ``heron serve``, announced in it, as a user starts it."""
    monkeypatch.setenv("HERON_INTERVENTIONS_COOLDOWN", "0")
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    with free_socket() as sock:
        port = sock.getsockname()[1]
    with (tmp_path / "serve.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "heron", "serve", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(f"http://127.0.0.1:{port}", server)  # type: ignore[arg-type]
            yield
        finally:
            server.terminate()
            server.wait(60)


def test_every_command_is_documented_with_an_example() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in people_app.registered_commands:
        assert command.name and f"heron people {command.name}" in text, command.name
        assert "Example: heron people" in (command.callback.__doc__ or ""), command.name


def test_the_activity_kinds_the_help_lists_are_the_agents() -> None:
    assert typing.get_args(typing.get_type_hints(ActivityReport)["kind"]) == ACTIVITY_KINDS


def test_roster_activity_and_a_ping_from_the_command_line(
    served: None,
    listener: str,  # noqa: F811
) -> None:
    bob = heron("join", "bob", "--room", ROOM, "--channel", f"json://{listener}/bob", "--json")
    assert (bob["person"], bob["room"], bob["channel"]) == ("bob", ROOM, f"json://{listener}/bob")
    heron("join", "carol", "--room", ROOM, "--channel", f"json://{listener}/carol")
    listed = heron("list", "--room", ROOM, "--json")
    assert [(m["person"], m["channel"]) for m in listed] == [
        ("bob", f"json://{listener}/bob"),
        ("carol", f"json://{listener}/carol"),
    ]
    assert heron("list", "--room", ROOM).split() == [
        "bob",
        f"json://{listener}/bob",
        "carol",
        f"json://{listener}/carol",
    ]

    # alice edits a file in her editor; bob reads about its topic: the server sees both.
    assert heron("activity", "alice", "edit", *EDIT, "--room", ROOM, "--json") == []
    read = ["--text", "Joining a LiveKit room from a voice agent"]
    (card,) = heron("activity", "bob", "read", *read, "--room", ROOM, "--json")
    assert card["kind"] == "research_overlap" and card["room"] == ROOM, card

    # alice pings bob: his webhook, and only it, hears of it.
    args = ["ping", "bob", "--about", "backend/voice/livekit.py", "--room", ROOM, "--by", "alice"]
    ping = heron(*args, "--json")
    assert ping["kind"] == "ping" and ping["status"] == "delivered", ping
    deadline = time.monotonic() + 30
    while not Recorder.received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r["path"] for r in Recorder.received] == ["/bob"]
    assert "alice asks bob to sync up" in Recorder.received[0]["body"]["message"]

    # Errors say what to do next, in one line.
    nobody = heron("ping", "erin", "--about", "x", "--room", ROOM, ok=False)
    assert "'erin' is not in room 'voice-team'" in nobody and "join" in nobody
    no_path = heron("activity", "alice", "edit", "--room", ROOM, ok=False)
    assert "give path" in no_path
    aside = heron("activity", "alice", "edit", *EDIT, "--room", ROOM, ok=False, env=ASIDE)
    assert "heron serve" in aside and "other HERON_* settings" in aside
    unknown = heron("activity", "alice", "write", "--room", ROOM, ok=False)
    assert "Choose from: edit, release, read, search" in unknown

    assert heron("leave", "carol", "--room", ROOM, "--json")["left"] is True
    assert "carol was not in room voice-team" in heron("leave", "carol", "--room", ROOM)
    assert [m["person"] for m in heron("list", "--room", ROOM, "--json")] == ["bob"]
