"""``heron watchdog`` as an operator runs it: --once, --strict, --json, report, mistakes."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.ops.watchdog.conftest import python
from tests.run_heron import run_heron
from tests.server.conftest import start_heron


def write(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "watchdog.yml"
    checks = [{"name": "job", "kind": "command", "argv": python(code), "failure_threshold": 1}]
    path.write_text(json.dumps({"checks": checks}))
    return path


def test_once_strict_json_and_report(home: Path, tmp_path: Path) -> None:
    failing = write(tmp_path, "raise SystemExit(1)")
    done = run_heron("watchdog", "--once", "--config", str(failing), "--json", ok=False)
    assert done.returncode == 0, done.stderr  # not --strict: a failed check is no error
    report = json.loads(done.stdout)
    assert (report["ok"], report["checks"][0]["status"]) == (False, "firing")
    strict = run_heron("watchdog", "--once", "--strict", "--config", str(failing), ok=False)
    assert strict.returncode == 1 and "FIRING" in strict.stdout and "job:" in strict.stdout
    shown = run_heron("watchdog", "report")
    assert "job: exit status 1 (wanted 0)" in shown.stdout
    assert json.loads(run_heron("watchdog", "report", "--json").stdout)["ok"] is False
    passing = write(tmp_path, "pass")
    assert run_heron("watchdog", "--once", "--strict", "--config", str(passing)).returncode == 0


def test_mistakes_are_one_line_errors(home: Path, tmp_path: Path) -> None:
    nothing = run_heron("watchdog", "report", ok=False)
    assert nothing.returncode == 1 and "run: heron watchdog --once" in nothing.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("checks:\n  - {name: a, kind: http, url: http://x, conditions: ['[X] == 1']}")
    done = run_heron("watchdog", "--once", "--config", str(bad), ok=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "line 2" in done.stderr and "unknown placeholder [X]" in done.stderr
    interval = run_heron("watchdog", "--interval", "soon", ok=False)
    assert interval.returncode == 2 and "not a duration" in interval.stderr


def test_a_loop_keeps_its_last_good_config_when_an_edit_breaks_it(
    home: Path, tmp_path: Path
) -> None:
    path = write(tmp_path, "pass")
    history = home / "watchdog-history.jsonl"
    loop = start_heron(["watchdog", "--interval", "0.2s", "--config", str(path)], {})
    try:
        wait(lambda: history.exists() and len(history.read_text().splitlines()) >= 2)
        path.write_text("checks: [")
        runs = len(history.read_text().splitlines())
        wait(lambda: len(history.read_text().splitlines()) >= runs + 3)
    finally:
        loop.send_signal(signal.SIGTERM)
        _, stderr = loop.communicate(timeout=60)
    assert "not valid YAML" in stderr and "previous watchdog config stays in force" in stderr
    assert all(json.loads(line)["ok"] for line in history.read_text().splitlines())


def wait(done: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
