"""Parity with Gatus and Alertmanager (issue 32): silences and maintenance windows,
``depends_on`` inhibition, heartbeat (push) checks through the server's route, TLS
certificates' time left, and per-check intervals."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from heron.ops.watchdog.heartbeats import record_beat
from heron.ops.watchdog.silences import Silences
from heron.server import create_app
from heron.settings import Settings
from tests.ops.watchdog.conftest import alerts_of, appender, python, watchdog
from tests.run_heron import run_heron
from tests.server.conftest import running
from tests.test_notify import Hook

T0 = 1_750_000_000.0


def failing_while(flag: Path) -> str:
    """A command check's argv (as YAML) failing while ``flag`` exists."""
    return json.dumps(python(f"import os; raise SystemExit(os.path.exists({str(flag)!r}))"))


def test_a_silenced_failing_check_sends_nothing_then_fires_once_when_it_ends(
    settings: Settings, hook: Hook, tmp_path: Path
) -> None:
    flag, remedy = tmp_path / "down", tmp_path / "remedy.log"
    flag.touch()
    yml = f"""
alerts: ["{hook.url}"]
checks:
  - {{name: api, kind: command, argv: {failing_while(flag)}, failure_threshold: 1,
      remedy: {{kind: command, argv: {json.dumps(appender(remedy))}}}}}
"""
    now = [T0]
    silence = Silences(settings.home).add("ap*", 7200, "database upgrade", "ops", T0)
    sent, muted = [], []
    for step in (0, 3600, 3599, 2, 60):  # the silence ends 2 h after T0
        now[0] += step
        report = watchdog(settings, yml, clock=lambda: now[0]).run_once()
        sent.append(alerts_of(report))
        muted.append(report["checks"][0]["muted"])
    assert sent == [[], [], [], ["firing"], []]
    assert muted[0] and "database upgrade" in muted[0] and silence.id in muted[0]
    assert muted[3:] == [None, None]
    assert [m["title"].split()[0] for m in hook.received] == ["[FIRING]"]
    # No remedy ran while silenced (a person is working on it), then it ran again.
    assert remedy.read_text().count("ran") == 2


def test_a_maintenance_window_mutes_and_a_recovery_within_it_tells_nobody(
    settings: Settings, hook: Hook, tmp_path: Path
) -> None:
    flag = tmp_path / "down"
    flag.touch()
    start = datetime.fromtimestamp(T0, UTC).strftime("%Y-%m-%dT%H:%M")
    daily = datetime.fromtimestamp(T0, UTC).strftime("%H:%M")
    yml = f"""
alerts: ["{hook.url}"]
maintenance:
  - {{start: "{start}", duration: 1h, checks: [api], reason: planned}}
  - {{start: "{daily}", duration: 30m, every: [Monday], checks: [other]}}
checks:
  - {{name: api, kind: command, argv: {failing_while(flag)}, failure_threshold: 1}}
"""
    now = [T0 + 30]
    quiet = watchdog(settings, yml, clock=lambda: now[0]).run_once()
    assert alerts_of(quiet) == [] and "planned" in quiet["checks"][0]["muted"]
    flag.unlink()
    now[0] += 600
    assert alerts_of(watchdog(settings, yml, clock=lambda: now[0]).run_once()) == []
    flag.touch()
    now[0] = T0 + 3601  # the window is over
    assert alerts_of(watchdog(settings, yml, clock=lambda: now[0]).run_once()) == ["firing"]
    assert len(hook.received) == 1


def test_a_failing_dependency_inhibits_its_dependants_one_alert_not_three(
    settings: Settings, hook: Hook, tmp_path: Path
) -> None:
    db, remedy = tmp_path / "db-down", tmp_path / "remedy.log"
    db.touch()
    fix = json.dumps(appender(remedy))
    yml = f"""
alerts: ["{hook.url}"]
checks:
  - {{name: api, kind: command, argv: {failing_while(db)}, failure_threshold: 1,
      depends_on: [db], remedy: {{kind: command, argv: {fix}}}}}
  - {{name: worker, kind: command, argv: {failing_while(db)}, failure_threshold: 1,
      depends_on: [api]}}
  - {{name: db, kind: command, argv: {failing_while(db)}, failure_threshold: 1}}
"""
    down = watchdog(settings, yml).run_once()
    assert [c["name"] for c in down["checks"]] == ["api", "worker", "db"]  # the file's order
    assert [c["status"] for c in down["checks"]] == ["firing"] * 3
    assert [(a["check"], a["alert"]) for a in down["actions"]] == [("db", "firing")]
    assert "depends on db" in down["checks"][0]["muted"]
    assert "depends on api" in down["checks"][1]["muted"]  # transitively
    assert not remedy.exists()  # the api's restart waits for its database
    db.unlink()
    up = watchdog(settings, yml).run_once()
    assert [(a["check"], a["alert"]) for a in up["actions"]] == [("db", "resolved")]
    assert [m["title"].split()[0] for m in hook.received] == ["[FIRING]", "[RESOLVED]"]


def test_depends_on_names_defined_checks_and_makes_no_cycle(settings: Settings) -> None:
    from heron.errors import ConfigError

    for deps, said in (("[nope]", "not defined"), ("[b]", "cycle: a -> b -> a")):
        yml = f"""
checks:
  - {{name: a, kind: disk, depends_on: {deps}}}
  - {{name: b, kind: disk, depends_on: [a]}}
"""
        with pytest.raises(ConfigError, match=said):
            watchdog(settings, yml)


def test_a_missed_heartbeat_fires_once_and_the_next_beat_resolves_it(
    settings: Settings, hook: Hook, home: Path
) -> None:
    token = "t" * 40
    (home / "watchdog.yml").parent.mkdir(parents=True, exist_ok=True)
    yml = f"""
alerts: ["{hook.url}"]
checks:
  - {{name: nightly, kind: heartbeat, period: 10m}}
  - {{name: fresh, kind: heartbeat, period: 10m}}
"""
    (home / "watchdog.yml").write_text(yml)
    record_beat(settings.home, "nightly", time.time() - 1200)  # 20 minutes ago
    now = [time.time()]
    runs = []
    served = Settings(library={"default_docs": False}, server={"api_token": token})
    with running(create_app(served)) as (url, _), httpx.Client(base_url=url) as client:
        for _ in range(2):
            runs.append(watchdog(settings, yml, clock=lambda: now[0]).run_once())
            now[0] += 1
        assert client.post("/watchdog/heartbeat/nightly", json={}).status_code == 401  # no token
        auth = {"authorization": f"Bearer {token}"}
        unknown = client.post("/watchdog/heartbeat/other", headers=auth, json={})
        assert unknown.status_code == 404 and "heartbeat checks: nightly, fresh" in unknown.text
        beat = client.post("/watchdog/heartbeat/nightly", headers=auth, json={})
        assert beat.status_code == 200 and beat.json()["check"] == "nightly"
    now[0] = time.time() + 1
    runs.append(watchdog(settings, yml, clock=lambda: now[0]).run_once())
    now[0] += 660  # 11 minutes: no beat from either
    runs.append(watchdog(settings, yml, clock=lambda: now[0]).run_once())
    assert [[(a["check"], a["alert"]) for a in r["actions"]] for r in runs] == [
        [("nightly", "firing")], [], [("nightly", "resolved")],
        [("nightly", "firing"), ("fresh", "firing")],
    ]  # fmt: skip
    assert "last beat 20m" in runs[0]["checks"][0]["detail"]
    assert "no beat in 11m" in runs[3]["checks"][1]["detail"]


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """An HTTPS server on loopback whose self-signed certificate expires in a day."""
    tmp = tmp_path_factory.mktemp("tls")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], cert
    server.shutdown()
    server.server_close()


def test_a_certificate_near_expiry_fails_certificate_expiration_over_48h(
    settings: Settings, tls_server: tuple[int, Path]
) -> None:
    port, cert = tls_server
    yml = f"""
checks:
  - {{name: tls, kind: tls, url: "tls://127.0.0.1:{port}", ca_file: {cert},
      conditions: ["[CONNECTED] == true", "[CERTIFICATE_EXPIRATION] > 48h"]}}
  - {{name: tls-day, kind: tls, url: "tls://127.0.0.1:{port}", ca_file: {cert},
      conditions: ["[CERTIFICATE_EXPIRATION] > 12h", "[RESPONSE_TIME] < 5s"]}}
  - {{name: https, kind: http, url: "https://127.0.0.1:{port}/", ca_file: {cert},
      conditions: ["[STATUS] == 200", "[BODY] == pat(o*)", "[CERTIFICATE_EXPIRATION] < 25h"]}}
  - {{name: untrusted, kind: tls, url: "tls://127.0.0.1:{port}"}}
"""
    near, day, https, untrusted = watchdog(settings, yml).run_once()["checks"]
    assert not near["ok"] and "[CERTIFICATE_EXPIRATION] (23h59m" in near["detail"], near
    assert "> 48h" in near["detail"]
    assert day["ok"], day["detail"]
    assert https["ok"] and 0 < https["data"]["certificate_expiration"] <= 86_400_000, https
    # Verified by default: a certificate no CA here signed does not connect.
    assert not untrusted["ok"] and "CERTIFICATE_VERIFY_FAILED" in untrusted["detail"]


def test_a_check_runs_at_most_once_per_interval_and_deploys_default_to_the_setting(
    settings: Settings, tmp_path: Path
) -> None:
    yml = f"""
checks:
  - {{name: slow, kind: command, argv: {json.dumps(python("pass"))}, interval: 1h30m}}
  - {{name: fast, kind: command, argv: {json.dumps(python("pass"))}}}
  - {{name: release, kind: deploy, path: {tmp_path}}}
"""
    now = [T0]
    first = watchdog(settings, yml, clock=lambda: now[0]).run_once(kinds=["command"])
    assert [(c["name"], c["ran"]) for c in first["checks"]] == [("slow", True), ("fast", True)]
    now[0] += 3600
    second = watchdog(settings, yml, clock=lambda: now[0]).run_once()
    ran = {c["name"]: c["ran"] for c in second["checks"]}
    assert ran == {"slow": False, "fast": True, "release": True}
    assert second["checks"][0]["ok"]  # shown as it last was
    now[0] += 60  # under HERON_WATCHDOG_DEPLOY_INTERVAL (2 minutes)
    third = watchdog(settings, yml, clock=lambda: now[0]).run_once()
    assert {c["name"]: c["ran"] for c in third["checks"]}["release"] is False
    now[0] += 1800
    fourth = watchdog(settings, yml, clock=lambda: now[0]).run_once()
    assert all(c["ran"] for c in fourth["checks"])


def test_the_silence_commands(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "watchdog.yml"
    path.write_text(json.dumps({"checks": [{"name": "api", "kind": "disk"}]}))
    made = run_heron("watchdog", "silence", "api", "--for", "1h30m", "--reason", "upgrade",
                     "--config", str(path))  # fmt: skip
    assert "muted until" in made.stdout
    [listed] = json.loads(run_heron("watchdog", "silences", "--json").stdout)
    assert (listed["matcher"], listed["reason"], listed["active"]) == ("api", "upgrade", True)
    assert abs(listed["ends"] - listed["starts"] - 5400) < 1
    assert "ended" in run_heron("watchdog", "expire", listed["id"]).stdout
    assert not Silences(home).matching("api", time.time())
