"""A watchdog run against real loopback endpoints: thresholds, remedies and their budget,
alerts deduplicated Alertmanager style, the interventions hook, the state between runs."""

from __future__ import annotations

import json
from pathlib import Path

from heron.ops.watchdog import history_path, latest_path
from heron.settings import Settings
from tests.ops.watchdog.conftest import Endpoint, alerts_of, appender, python, watchdog
from tests.test_notify import Hook


def flapping(endpoint: Endpoint, hook: Hook, remedy: Path) -> str:
    return f"""
alerts: ["{hook.url}"]
checks:
  - name: api
    kind: http
    url: {endpoint.url}/ready
    conditions: ["[STATUS] == 200", "[BODY].ready == true", "[RESPONSE_TIME] < 5000"]
    failure_threshold: 2
    success_threshold: 2
    remedy: {{kind: command, argv: {json.dumps(appender(remedy))}}}
"""


def test_thresholds_keep_a_flapping_endpoint_from_alerting_or_restarting(
    settings: Settings, endpoint: Endpoint, hook: Hook, tmp_path: Path
) -> None:
    remedy = tmp_path / "remedy.log"
    yml = flapping(endpoint, hook, remedy)
    statuses = []
    for failures in (1, 1, 1):  # fails once, passes, fails once ...: a flap, never twice
        endpoint.failures = failures
        statuses += [watchdog(settings, yml).run_once()["checks"][0]["status"] for _ in (1, 2)]
    assert statuses == ["failing", "ok"] * 3
    assert not remedy.exists() and hook.received == []


def test_an_incident_alerts_once_restarts_and_resolves_once(
    settings: Settings, endpoint: Endpoint, hook: Hook, tmp_path: Path
) -> None:
    remedy = tmp_path / "remedy.log"
    yml = flapping(endpoint, hook, remedy)
    endpoint.failures = 4
    reports = [watchdog(settings, yml).run_once() for _ in range(7)]
    checks = [r["checks"][0] for r in reports]
    assert [c["status"] for c in checks] == [
        "failing", "firing", "firing", "firing", "recovering", "ok", "ok"
    ]  # fmt: skip
    assert [alerts_of(r) for r in reports] == [[], ["firing"], [], [], [], ["resolved"], []]
    # The remedy ran on each failed run of the open incident, and each run was recorded.
    assert remedy.read_text().count("ran") == 3
    remedies = [a for r in reports for a in r["actions"] if a["action"] == "remedy"]
    assert [a["ok"] for a in remedies] == [True] * 3 and remedies[0]["remedy"] == "command"
    # Delivered to the webhook: exactly one notice for the incident, one for its end.
    assert [m["type"] for m in hook.received] == ["warning", "success"]
    firing, resolved = hook.received
    assert "[FIRING]" in firing["title"] and "api" in firing["title"]
    assert "[STATUS] (503) == 200" in firing["message"]
    assert "Remedy ran: " in firing["message"] and "remedy.log" in firing["message"]
    assert "[RESOLVED]" in resolved["title"]
    # The report and the history record it; history is one line per run.
    latest = json.loads(latest_path(settings.home).read_text())
    assert latest["checks"][0]["status"] == "ok"
    lines = history_path(settings.home).read_text().splitlines()
    assert len(lines) == 7
    assert [a["alert"] for a in json.loads(lines[1])["actions"] if a["action"] == "alert"] == [
        "firing"
    ]


def test_the_restart_budget_runs_out_escalates_and_stops_restarting(
    settings: Settings, hook: Hook, tmp_path: Path
) -> None:
    remedy = tmp_path / "remedy.log"
    yml = f"""
alerts: ["{hook.url}"]
checks:
  - name: worker
    kind: command
    argv: {json.dumps(python("raise SystemExit(3)"))}
    failure_threshold: 1
    critical: true
    restart_budget: 2
    budget_window: 1h
    remedy: {{kind: command, argv: {json.dumps(appender(remedy))}}}
"""
    reports = [watchdog(settings, yml).run_once() for _ in range(5)]
    assert remedy.read_text().count("ran") == 2  # the budget, and not one more
    assert [c["status"] for r in reports for c in r["checks"]] == [
        "firing", "firing", "escalated", "escalated", "escalated"
    ]  # fmt: skip
    assert [alerts_of(r) for r in reports] == [["firing"], [], ["escalated"], [], []]
    assert [m["type"] for m in hook.received] == ["failure", "failure"]  # critical
    assert "A person is needed" in hook.received[1]["message"]
    assert "exit status 3 (wanted 0)" in reports[0]["checks"][0]["detail"]
    state = json.loads((settings.home / "watchdog-state.json").read_text())["checks"]["worker"]
    assert state["escalated"] is True and len(state["remedies"]) == 2


def test_a_failed_check_is_alerted_again_after_the_repeat_interval(
    settings: Settings, hook: Hook
) -> None:
    now = [1_000_000.0]
    yml = f"""
alerts: ["{hook.url}"]
repeat_interval: 1h
checks:
  - {{name: job, kind: command, argv: {json.dumps(python("raise SystemExit(1)"))},
      failure_threshold: 1}}
"""
    sent = []
    for step in (0, 1800, 1800, 60, 3600):  # minutes since the last run, in seconds
        now[0] += step
        sent.append(alerts_of(watchdog(settings, yml, clock=lambda: now[0]).run_once()))
    assert sent == [["firing"], [], ["repeat"], [], ["repeat"]]
    assert len(hook.received) == 3


def test_incidents_raise_and_resolve_an_intervention_and_an_unreachable_hook_is_recorded(
    settings: Settings, endpoint: Endpoint, tmp_path: Path
) -> None:
    flag = tmp_path / "broken"
    flag.touch()
    check = python(f"import os; raise SystemExit(os.path.exists({str(flag)!r}))")
    yml = f"""
interventions_url: {endpoint.url}/rpc
interventions_room: infra
checks:
  - {{name: job, kind: command, argv: {json.dumps(check)}, failure_threshold: 1,
      critical: true}}
"""
    raised = watchdog(settings, yml).run_once()
    flag.unlink()
    resolved = watchdog(settings, yml).run_once()
    first, second = endpoint.calls
    assert first["method"] == "interventions.raise"
    params = first["params"]
    assert (params["kind"], params["key"], params["room"], params["severity"]) == (
        "watchdog_incident", "watchdog:job", "infra", "critical"
    )  # fmt: skip
    assert params["facts"]["check"] == "job" and params["facts"]["failures"] == 1
    assert params["facts"]["since"] and "exit status 1" in params["facts"]["detail"]
    assert second["method"] == "interventions.resolve"
    assert second["params"] == {"key": "watchdog:job", "room": "infra"}
    hooked = [a for a in raised["actions"] + resolved["actions"] if a["action"] == "intervention"]
    assert [a["ok"] for a in hooked] == [True, True]

    dead = yml.replace(endpoint.url, "http://127.0.0.1:9")  # nothing listens on port 9
    flag.touch()
    report = watchdog(settings, dead).run_once()
    [call] = [a for a in report["actions"] if a["action"] == "intervention"]
    assert call["ok"] is False and "ConnectError" in call["detail"]
    assert report["checks"][0]["status"] == "firing"  # the watchdog carried on


def test_the_history_rotates_by_size(settings: Settings) -> None:
    yml = f"""
history_max_bytes: 2000
history_keep: 2
checks:
  - {{name: ok, kind: command, argv: {json.dumps(python("pass"))}}}
"""
    for _ in range(30):
        watchdog(settings, yml).run_once()
    history = history_path(settings.home)
    rotated = sorted(p.name for p in history.parent.glob(f"{history.name}*"))
    assert rotated == [history.name, f"{history.name}.1", f"{history.name}.2"]
    for path in history.parent.glob(f"{history.name}*"):
        assert path.stat().st_size <= 2000
        assert all(json.loads(line)["ok"] for line in path.read_text().splitlines())
