"""Operations: how long ``heron doctor`` takes, how big a ``/metrics`` scrape is, how long
a backup takes.

Setup: a fresh HERON_HOME in a temporary directory with the default library (Heron's own
``docs/``) indexed, as a new installation has it after ``heron index``.

1. ``doctor(offline=True)`` in-process, ``RUNS`` times: each check's and the whole run's
   p50 and p95 (the first run, which loads the embedding model, is left out); then
   ``heron doctor --offline --json`` as the watchdog runs it, a new process each time
   (start-up and imports included).
2. ``heron serve`` on loopback after 100 ``search.query`` calls and 20 ``GET /ready``:
   the ``/metrics`` body (bytes, samples), and scrape and ``GET /doctor?offline=1`` latency.
3. ``heron backup`` of the home: bytes and seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.common import percentiles, table
from bench.server import start_server

RUNS = 20
CLI_RUNS = 5
SCRAPES = 50


def _home(root: Path) -> dict[str, str]:
    """The variables of a fresh home with the default library indexed."""
    env = {"HERON_HOME": str(root / "home"), "HERON_LIBRARY_DEFAULT_DOCS": "true"}
    command = [sys.executable, "-m", "heron", "index"]
    subprocess.run(command, check=True, capture_output=True, env=os.environ | env)
    return env


def _doctor_rows() -> list[list[object]]:
    from heron.ops.doctor import doctor
    from heron.settings import Settings

    settings = Settings()
    doctor(settings, offline=True)  # loads the model once, as a long-lived caller would
    reports = [doctor(settings, offline=True) for _ in range(RUNS)]
    assert all(report.ok for report in reports), reports[-1].to_dict()
    rows: list[list[object]] = []
    for i, check in enumerate(reports[0].checks):
        p50, p95 = percentiles([r.checks[i].seconds for r in reports])
        rows.append([check.name, check.status, f"{p50:.1f}", f"{p95:.1f}"])
    p50, p95 = percentiles([r.seconds for r in reports])
    rows.append(["all (in-process)", "ok", f"{p50:.1f}", f"{p95:.1f}"])
    walls = []
    for _ in range(CLI_RUNS):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "heron", "doctor", "--offline", "--json"],
            check=True,
            capture_output=True,
        )
        walls.append(time.perf_counter() - started)
    p50, p95 = percentiles(walls)
    rows.append(["heron doctor --offline (new process)", "ok", f"{p50:.0f}", f"{p95:.0f}"])
    return rows


def _scrape_rows(env: dict[str, str]) -> list[list[object]]:
    proc, url = start_server(env)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for i in range(100):
                call = {"jsonrpc": "2.0", "id": i, "method": "search.query",
                        "params": {"query": "how do I back up heron?", "top_k": 3}}  # fmt: skip
                client.post("/rpc", json=call).raise_for_status()
            for _ in range(20):
                client.get("/ready")
            seconds, size = [], 0
            for _ in range(SCRAPES):
                started = time.perf_counter()
                body = client.get("/metrics").text
                seconds.append(time.perf_counter() - started)
                size = len(body.encode())
            samples = sum(len(f.samples) for f in text_string_to_metric_families(body))
            doctors = []
            for _ in range(5):
                started = time.perf_counter()
                client.get("/doctor", params={"offline": "1"}).raise_for_status()
                doctors.append(time.perf_counter() - started)
    finally:
        proc.terminate()
        proc.wait(60)
    scrape50, scrape95 = percentiles(seconds)
    doctor50, doctor95 = percentiles(doctors)
    return [
        [
            "/metrics body",
            f"{size:,} bytes, {samples} samples",
            f"{scrape50:.1f}",
            f"{scrape95:.1f}",
        ],
        ["GET /doctor?offline=1", "ok", f"{doctor50:.0f}", f"{doctor95:.0f}"],
    ]


def _backup_row(root: Path) -> list[object]:
    from heron.ops.backup import backup

    report = backup(root / "backup")
    size = f"{report.bytes / 1e6:.1f} MB, {len(report.databases)} databases"
    return ["heron backup", size, f"{report.seconds * 1000:.0f}", "-"]


def run() -> str:
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = _home(root)
        os.environ.update(env)  # the in-process doctor and backup read the settings
        try:
            rows = _doctor_rows() + _scrape_rows(env) + [_backup_row(root)]
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return table(
        "Operations: doctor, /metrics, backup (home: Heron's docs indexed)",
        ["what", "status / size", "p50 ms", "p95 ms"],
        rows,
    )


if __name__ == "__main__":
    run()
