"""watchdog.yml: validated whole, every mistake named with its line; the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.errors import ConfigError
from heron.ops.watchdog import default_config, load_config, parse_config, parse_duration
from heron.ops.watchdog.config import parse_size
from heron.settings import Settings


@pytest.mark.parametrize(
    ("yml", "said"),
    [
        ("checks:\n  - name: a\n    kind: http\n   url: x\n", "line 4 column 4: not valid YAML"),
        ("checks:\n  - {name: a, kind: htp}\n", "line 2, check 'a': kind must be one of: http"),
        ("checks:\n  - {name: a}\n", "each check needs a kind"),
        (
            "checks:\n  - name: a\n    kind: http\n    url: http://x\n"
            "    conditions:\n      - '[STATUS] == 200'\n      - '[STATUS] = 200'\n",
            "line 7, check 'a'.conditions.1: Condition '[STATUS] = 200': unexpected '= 200'",
        ),
        ("checks:\n  - {name: a, kind: disk, min_free: lots}\n", "'lots' is not a size"),
        ("checks:\n  - {name: a, kind: http, url: ftp://x}\n", "check 'a'.url"),
        ("checks:\n  - {name: a, kind: disk, colour: red}\n", "check 'a'.colour: Extra inputs"),
        ("checks:\n  - {name: a, kind: disk}\n  - {name: a, kind: disk}\n", "given twice: a"),
        ("checks:\n  - {name: a, kind: process}\n", "exactly one of pid_file and process"),
        (
            "checks:\n  - {name: d, kind: deploy, path: /srv, checks: [nope]}\n",
            "names checks that are not defined (or itself): nope",
        ),
        ("repeat_interval: soon\n", "'soon' is not a duration"),
        (
            "checks:\n  - {name: a, kind: disk, remedy: {kind: command, argv: []}}\n",
            "check 'a'.remedy.argv",
        ),
        ("a: &x [1]\nb: *x\n", "aliases"),
        ("- just\n- a list\n", "a mapping with a 'checks' list"),
    ],
)
def test_mistakes_are_config_errors_naming_the_place(yml: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(yml, "/etc/heron/watchdog.yml")
    assert said in str(caught.value)
    assert str(caught.value).startswith("/etc/heron/watchdog.yml")


def test_a_full_config_loads(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "watchdog.yml"
    path.write_text(
        """
alerts: ["json://127.0.0.1:9/hook"]
repeat_interval: 30m
checks:
  - name: api
    kind: http
    url: http://127.0.0.1:8765/ready
    conditions: ["[BODY].ready == true", "len([BODY].checks) > 0"]
    remedy: {kind: systemd, unit: heron.service}
  - {name: rpc, kind: rpc, url: "http://127.0.0.1:8765/rpc", method: library.list}
  - {name: doc, kind: doctor, checks: [store, disk]}
  - {name: unit, kind: systemd, unit: heron.service}
  - {name: idx, kind: command, argv: [heron, info], remedy: {kind: reindex, library: docs}}
"""
    )
    config = load_config(path, settings)
    assert config.repeat_interval == 1800 and config.source == str(path)
    assert [c.kind for c in config.checks] == ["http", "rpc", "doctor", "systemd", "command"]
    api = config.check("api")
    assert (api.failure_threshold, api.success_threshold, api.restart_budget) == (2, 1, 3)
    assert [c.text for c in api.conditions][1] == "len([BODY].checks) > 0"


def test_without_a_file_the_defaults_run(tmp_path: Path, settings: Settings) -> None:
    config = load_config(None, settings)  # $HERON_HOME/watchdog.yml does not exist
    assert config.source == "defaults"
    # No server listens on the default port here, so its checks are left out.
    assert [(c.name, c.kind) for c in config.checks] == [("doctor", "doctor"), ("disk", "disk")]
    assert config.check("disk").path == settings.home
    assert default_config(settings) == config


def test_durations_and_sizes() -> None:
    assert [parse_duration(v) for v in ("500ms", "30s", "5m", "1h", "1d", 7)] == [
        0.5, 30, 300, 3600, 86400, 7
    ]  # fmt: skip
    # Compound, as Go, Gatus and Alertmanager write them.
    assert [parse_duration(v) for v in ("1h30m", "2m30s", "1.5h", "1h0m15s", "300us")] == [
        5400, 150, 5400, 3615, 0.0003
    ]  # fmt: skip
    assert [parse_size(v) for v in ("2GiB", "500MB", 10)] == [2 * 1024**3, 500_000_000, 10]
    for bad in ("0s", "-1m", "5 minutes", "1h 30m", "h", "1x", "1h30"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_every_duration_field_takes_compound_durations(settings: Settings) -> None:
    config = parse_config(
        "repeat_interval: 1h30m\nchecks:\n  - {name: a, kind: disk, timeout: 2m30s, "
        "budget_window: 1h30m, interval: 500ms}\n  - {name: b, kind: heartbeat, period: 1d12h}",
        "watchdog.yml",
    )
    a, b = config.checks
    assert (config.repeat_interval, a.timeout, a.budget_window, a.interval) == (
        5400,
        150,
        5400,
        0.5,
    )
    assert b.period == 36 * 3600


def test_a_named_file_must_exist(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(ConfigError, match=r"absent\.yml does not exist"):
        load_config(tmp_path / "absent.yml", settings)
    with pytest.raises(ConfigError, match=r"absent\.yml does not exist"):
        load_config(None, Settings(ops={"watchdog_config": tmp_path / "absent.yml"}))
