"""Alert channels against a real loopback webhook (apprise's ``json://``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from heron.errors import ConfigError
from heron.notify import Channels


class Hook:
    """A JSON webhook that fails its first ``failures`` requests with 500."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.received: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if hook.failures > 0:
                    hook.failures -= 1
                    self.send_response(500)
                else:
                    hook.received.append(json.loads(body))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    thread = threading.Thread(target=h.server.serve_forever, daemon=True)
    thread.start()
    yield h
    h.server.shutdown()
    h.server.server_close()


def test_a_notice_reaches_a_json_webhook_with_its_severity(hook: Hook) -> None:
    [delivery] = Channels.parse([hook.url]).send("Disk low", "/srv 97%", severity="critical")
    assert delivery.ok and delivery.attempts == 1
    [sent] = hook.received
    assert (sent["title"], sent["message"], sent["type"]) == ("Disk low", "/srv 97%", "failure")


def test_a_failing_channel_is_retried_with_backoff_then_delivered(hook: Hook) -> None:
    hook.failures = 2
    waits: list[float] = []
    channels = Channels.parse([hook.url], retries=3, backoff=0.25, sleep=waits.append)
    [delivery] = channels.send("t", "b")
    assert (delivery.ok, delivery.attempts, waits) == (True, 3, [0.25, 0.5])
    assert len(hook.received) == 1


def test_an_unreachable_channel_is_recorded_failed_and_the_others_still_get_it(
    hook: Hook,
) -> None:
    dead = Hook()  # bound, never served: closed before use, so the port refuses
    dead.server.server_close()
    channels = Channels.parse([dead.url, hook.url], retries=2, sleep=lambda s: None)
    first, second = channels.send("t", "b")
    assert (first.ok, first.attempts, second.ok) == (False, 2, True)
    assert first.error


def test_urls_are_checked_when_built_and_their_secrets_never_shown() -> None:
    with pytest.raises(ConfigError, match="Not an alert URL"):
        Channels.parse(["nonsense://x"])
    [channel] = Channels.parse(["json://user:hunter2secret@127.0.0.1:9/hook"]).channels
    assert "hunter2secret" not in channel.name
    assert not Channels.parse(["", "  "])
