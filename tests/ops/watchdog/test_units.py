"""deploy/systemd: every unit passes ``systemd-analyze verify`` (rendered with this
checkout's heron, since verify checks that ExecStart's program exists)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci import missing

UNITS = Path(__file__).parents[3] / "deploy" / "systemd"
DOCUMENTED = "/opt/heron/venv/bin/heron"


def test_the_units_exist_and_name_the_documented_program() -> None:
    names = sorted(p.name for p in UNITS.iterdir())
    assert names == ["heron-deploy.service", "heron-deploy.timer", "heron-index.service",
                     "heron-index.timer", "heron-watchdog.service", "heron-watchdog.timer",
                     "heron.service"]  # fmt: skip
    for name in ("heron.service", "heron-watchdog.service", "heron-index.service",
                 "heron-deploy.service"):  # fmt: skip
        assert f"ExecStart={DOCUMENTED} " in (UNITS / name).read_text()
    serve = (UNITS / "heron.service").read_text()
    for option in ("ProtectSystem=strict", "PrivateTmp=yes", "NoNewPrivileges=yes",
                   "ReadWritePaths=/var/lib/heron"):  # fmt: skip
        assert option in serve
    assert "OnUnitActiveSec=5min" in (UNITS / "heron-watchdog.timer").read_text()
    # Sync-deploy on its own 2-minute timer, running only the deploy checks.
    assert "OnUnitActiveSec=2min" in (UNITS / "heron-deploy.timer").read_text()
    assert "heron watchdog --once --kind deploy\n" in (UNITS / "heron-deploy.service").read_text()


def test_systemd_analyze_verifies_every_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        missing("systemd-analyze is not installed", "apt-get install systemd")
    heron = Path(sys.executable).with_name("heron")
    if not heron.exists():
        pytest.fail(f"{heron} is missing: pip install -e . makes it")
    for unit in UNITS.iterdir():
        (tmp_path / unit.name).write_text(unit.read_text().replace(DOCUMENTED, str(heron)))
    units = sorted(str(p) for p in tmp_path.iterdir())
    done = subprocess.run([analyze, "verify", "--man=no", *units], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    # verify exits 0 on an unknown key, only warning; any line it prints is a finding.
    assert done.returncode == 0 and not done.stderr.strip() and not done.stdout.strip(), (
        done.stdout + done.stderr
    )
