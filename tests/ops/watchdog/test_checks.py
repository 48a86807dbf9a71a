"""The check kinds against real things: a loopback JSON-RPC endpoint, heron doctor,
processes, the disk, systemd's absence, command exit statuses; and the remedies' argv."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from heron.ops.watchdog.config import CommandRemedy, ReindexRemedy, SystemdRemedy
from heron.ops.watchdog.remedies import apply, remedy_argv
from heron.settings import Settings
from tests.ops.watchdog.conftest import Endpoint, python, watchdog


def run(settings: Settings, **check: object) -> dict:
    """One run of the one check ``check`` (its fields), written as YAML's JSON subset."""
    yml = json.dumps({"checks": [{"name": "c", **check}]})
    [result] = watchdog(settings, yml).run_once()["checks"]
    return result


def test_rpc_checks_call_the_method_and_read_result_and_error(
    settings: Settings, endpoint: Endpoint
) -> None:
    conditions = ["[RESULT] == ok", "[ERROR] == null"]
    result = run(settings, kind="rpc", url=f"{endpoint.url}/rpc", method="library.list",
                 params={"a": 1}, conditions=conditions)  # fmt: skip
    assert result["ok"], result["detail"]
    assert endpoint.calls == [{"jsonrpc": "2.0", "id": 1, "method": "library.list",
                               "params": {"a": 1}}]  # fmt: skip
    assert result["data"]["status"] == 200 and result["data"]["response_time"] > 0


def test_http_checks_say_what_failed_and_a_closed_port_fails(settings: Settings) -> None:
    result = run(settings, kind="http", url="http://127.0.0.1:9/health", timeout=2)
    assert not result["ok"] and "cannot connect" in result["detail"]
    assert "[STATUS] (missing) == 200" in result["detail"]


def test_doctor_checks_run_heron_doctor(settings: Settings) -> None:
    result = run(settings, kind="doctor", checks=["disk"])
    assert result["ok"], result["detail"]
    assert result["data"]["checks"] == {"disk": "ok"}
    unknown = run(settings, kind="doctor", checks=["no-such-check"])
    assert not unknown["ok"] and "no-such-check" in unknown["detail"]


def test_process_checks_by_pid_file_and_by_name(settings: Settings, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    pid_file.write_text(str(os.getpid()))
    assert run(settings, kind="process", pid_file=str(pid_file))["ok"]
    pid_file.write_text("999999999")
    dead = run(settings, kind="process", pid_file=str(pid_file))
    assert not dead["ok"] and "is not running" in dead["detail"]
    assert run(settings, kind="process", process=os.path.basename(sys.executable))["ok"]
    assert not run(settings, kind="process", process="no-such-program-x")["ok"]


def test_disk_checks_bound_free_space(settings: Settings) -> None:
    ok = run(settings, kind="disk", min_free="1MB")
    assert ok["ok"] and ok["data"]["free_bytes"] > 0
    full = run(settings, kind="disk", min_free_percent=100)
    assert not full["ok"] and "under 100% free" in full["detail"]


def test_command_checks_compare_the_exit_status_and_output(settings: Settings) -> None:
    argv = python("print('ready'); raise SystemExit(2)")
    ready = run(settings, kind="command", argv=argv, exit_code=2,
                conditions=['[OUTPUT] == "ready\\n"'])  # fmt: skip
    assert ready["ok"], ready["detail"]
    wrong = run(settings, kind="command", argv=argv)
    assert "exit status 2 (wanted 0)" in wrong["detail"] and "ready" in wrong["detail"]
    slow = run(settings, kind="command", argv=python("import time; time.sleep(30)"), timeout=0.5)
    assert not slow["ok"] and "ran past its 0.5 s timeout" in slow["detail"]
    missing = run(settings, kind="command", argv=["/no/such/program"])
    assert "cannot run /no/such/program" in missing["detail"]


def test_without_systemd_a_unit_check_says_so(settings: Settings) -> None:
    result = run(settings, kind="systemd", unit="heron.service")
    assert not result["ok"] and "systemd not available" in result["detail"]
    record = apply(SystemdRemedy(kind="systemd", unit="heron.service"))
    assert not record["ok"] and "systemd not available" in record["detail"]


def test_remedies_are_argv_lists() -> None:
    assert remedy_argv(SystemdRemedy(kind="systemd", unit="heron.service")) == [
        "systemctl", "restart", "--", "heron.service"
    ]  # fmt: skip
    assert remedy_argv(ReindexRemedy(kind="reindex", library="docs")) == [
        sys.executable, "-m", "heron", "index", "docs"
    ]  # fmt: skip
    # A shell's syntax is an argument like any other: nothing is interpreted.
    echo = CommandRemedy(kind="command", argv=[*python("import sys; print(sys.argv[1:])"),
                                               "$(touch x); rm -rf /"])  # fmt: skip
    record = apply(echo)
    assert record["ok"] and "['$(touch x); rm -rf /']" in record["detail"]
