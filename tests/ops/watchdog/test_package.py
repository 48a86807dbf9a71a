"""What the watchdog's programs get and give: a secret in what a check saw never reaches
the report, and a program sees the minimal environment plus only what its entry lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heron.settings import Settings
from tests.ops.watchdog.conftest import python, watchdog

SECRET = "sk-" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4"


def test_secrets_in_output_and_argv_are_masked(settings: Settings) -> None:
    leak = [*python("import sys; print(sys.argv[1]); raise SystemExit(1)"), SECRET]
    check = {"name": "leaky", "kind": "command", "argv": leak, "failure_threshold": 1,
             "remedy": {"kind": "command", "argv": leak}}  # fmt: skip
    report = watchdog(settings, json.dumps({"checks": [check]})).run_once()
    assert report["actions"][0]["action"] == "remedy"
    assert SECRET not in json.dumps(report)
    assert SECRET not in (settings.home / "watchdog-history.jsonl").read_text()


def test_a_check_sees_the_minimal_environment_and_the_variables_it_lists(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "HERON_API_TOKEN", "DEPLOY_TOKEN"):
        monkeypatch.setenv(name, SECRET)
    monkeypatch.setenv("DEPLOY_REGION", "eu-1")
    seen = tmp_path / "environ.json"
    code = f"import json, os; json.dump(dict(os.environ), open({str(seen)!r}, 'w'))"
    check = {"name": "env", "kind": "command", "argv": python(code),
             "environment": ["DEPLOY_REGION"]}  # fmt: skip
    report = watchdog(settings, json.dumps({"checks": [check]})).run_once()
    assert report["checks"][0]["ok"], report
    environ = json.loads(seen.read_text())
    assert environ["DEPLOY_REGION"] == "eu-1" and environ["PATH"]
    assert SECRET not in json.dumps(environ)  # keys, the API token, unlisted variables
