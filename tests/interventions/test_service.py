"""``Interventions``: the policy's channels for real: espeak-ng, a speech server and
webhooks on loopback (one listening, one not), and live subscribers."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from heron.errors import InputError, NotFound
from heron.interventions import Interventions, SpeechVoice
from heron.interventions.service import audio_folder
from heron.notify import Channels
from heron.redact import MASK
from heron.settings import Settings
from tests.interventions.conftest import COLLISION

WATCHDOG = {"check": "api-health", "detail": "GET /health answered 503 three times"}


class Recorder(BaseHTTPRequestHandler):
    """A webhook (apprise json://) and an OpenAI-style /v1/audio/speech, on loopback."""

    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).received.append({"path": self.path, "body": body})
        data = b"RIFF0000WAVEfake" if self.path == "/v1/audio/speech" else b"{}"
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    Recorder.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_critical_goes_out_as_card_message_and_voice(
    make_service: Callable[..., Interventions], listener: str, settings: Settings
) -> None:
    service = make_service(channels=Channels.parse([f"json://{listener}/hook"]))
    seen: list[tuple[str, int, str | None]] = []
    service.subscribe(lambda event, item: seen.append((event, item.id, item.audio_url)))
    sent = service.raise_("watchdog_incident", "watchdog:api", "ops", "critical", WATCHDOG)
    service.wait()
    got = service.get(sent.id)
    assert got.audio_url == f"/interventions/audio/{sent.id}.wav"
    assert seen == [("intervention", sent.id, got.audio_url)]  # the card carries the audio
    audio = audio_folder(settings) / f"{sent.id}.wav"
    assert audio.read_bytes()[:4] == b"RIFF" and audio.stat().st_size > 10_000
    assert sorted((d.channel, d.ok) for d in got.deliveries) == [
        ("card", True),
        ("message", True),
        ("voice", True),
    ]
    (hook,) = Recorder.received
    assert hook["path"] == "/hook" and "api-health is failing" in hook["body"]["message"]


def test_a_missing_tts_program_still_sends_the_card_and_records_why(
    make_service: Callable[..., Interventions],
) -> None:
    service = make_service(interventions={"tts_program": "no-such-tts"})
    cards: list[int] = []
    service.subscribe(lambda event, item: cards.append(item.id))
    sent = service.raise_("watchdog_incident", "watchdog:db", "ops", "critical", WATCHDOG)
    assert sent.status == "delivered" and sent.audio_url is None and cards == [sent.id]
    voice = next(d for d in sent.deliveries if d.channel == "voice")
    assert not voice.ok and "'no-such-tts' is not installed" in (voice.error or "")
    assert next(d for d in sent.deliveries if d.channel == "card").ok


def test_an_unreachable_webhook_is_retried_with_backoff_then_recorded_failed(
    make_service: Callable[..., Interventions],
) -> None:
    dead = Channels.parse([f"json://127.0.0.1:{closed_port()}/hook"], retries=3, backoff=0.2)
    service = make_service(channels=dead)
    cards: list[int] = []
    service.subscribe(lambda event, item: cards.append(item.id))
    start = time.monotonic()
    sent = service.raise_("collision", "collision:README.md", "team", "warning", COLLISION)
    assert cards == [sent.id] and time.monotonic() - start < 0.5  # the card did not wait
    service.wait()
    assert time.monotonic() - start >= 0.6  # waited 0.2 s, then 0.4 s, between the 3 tries
    message = next(d for d in service.get(sent.id).deliveries if d.channel == "message")
    assert (message.ok, message.attempts) == (False, 3) and message.error


def test_speech_server_backend(listener: str, tmp_path: Path) -> None:
    voice = SpeechVoice(tmp_path, f"http://{listener}/v1", model="tts-1")
    path = voice.render("Alert. The check is failing.", "7.wav")
    assert path.read_bytes().startswith(b"RIFF")
    (asked,) = Recorder.received
    assert asked["body"] == {
        "model": "tts-1",
        "voice": "alloy",
        "input": "Alert. The check is failing.",
        "response_format": "wav",
    }


def test_bad_input_is_refused_before_anything_is_stored(service: Interventions) -> None:
    with pytest.raises(InputError, match="Unknown intervention kind 'colision'"):
        service.raise_("colision", "k", "team", facts=COLLISION)
    with pytest.raises(InputError, match="missing: state"):
        service.raise_("collision", "k", "team", facts={"actors": "a", "file": "b"})
    with pytest.raises(InputError, match="Unknown severity 'urgent'"):
        service.raise_("collision", "k", "team", "urgent", COLLISION)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="needs a room"):
        service.raise_("collision", "k", " ", facts=COLLISION)
    assert service.list() == []
    with pytest.raises(NotFound, match="No interventions in room 'team'"):
        service.resolve("team", "k")
    with pytest.raises(InputError, match="Unknown outcome 'maybe'"):
        service.outcome(1, "maybe", "alice")
    with pytest.raises(NotFound):
        service.outcome(1, "accept", "alice")


def test_facts_are_redacted_and_events_reach_subscribers(service: Interventions) -> None:
    events: list[tuple[str, int]] = []
    unsubscribe = service.subscribe(lambda event, item: events.append((event, item.id)))
    facts = {"message": "token=ghp_" + "a" * 36}
    sent = service.raise_("notice", "n", "team", "info", facts)
    assert "ghp_" not in sent.text and MASK in sent.text and "ghp_" not in json.dumps(sent.facts)
    service.outcome(sent.id, "dismiss", "bob")
    service.resolve("team", "n")
    unsubscribe()
    service.raise_("notice", "n", "team", "info", {"message": "again"})
    assert events == [("intervention", sent.id), ("outcome", sent.id), ("resolved", sent.id)]
