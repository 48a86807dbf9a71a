"""Jobs: throughput of read-only jobs, event appends, and how fast abort kills a command.

Setup: a fresh ``jobs.db`` and a two-commit git repository in a temporary directory.
Each read-only job ("what changed?") runs ``git status --short --branch`` and
``git diff --stat`` there and records 7 events.

- 1,000 jobs queued at once, run by one ``JobRunner`` (``CONCURRENCY`` at once):
  jobs per second, and queue-to-done (``finished_at - created_at``) p50 and p95, which
  includes the wait in the queue; then 50 jobs one at a time for queue-to-done alone.
- Event append: 2,000 ``store.append`` calls of a 200-byte payload (one transaction each).
- Abort: 50 jobs whose test command is ``sleep 60``; each is aborted (``Jobs.abort``, what
  ``heron jobs abort`` calls) once the command runs, and the time until its process is
  gone is measured from the abort's return.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bench.common import table
from heron.jobs import Jobs, open_jobs
from heron.settings import Settings
from heron.wiring import job_runner  # the runner heron serve and heron jobs run build

JOBS = 1000
ONE_AT_A_TIME = 50
APPENDS = 2000
ABORTS = 50
CONCURRENCY = 4


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    for i in range(2):
        (repo / f"f{i}.txt").write_text(f"{i}\n" * 100)
        subprocess.run([*git, "add", "."], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", str(i)], cwd=repo, check=True)
    (repo / "f0.txt").write_text("changed\n")
    return repo


def _pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples) * 1000, q))


def _throughput(jobs: Jobs) -> list[tuple[str, str]]:
    ids = [jobs.create("what changed?").id for _ in range(JOBS)]
    start = time.perf_counter()
    asyncio.run(job_runner(jobs, concurrency=CONCURRENCY).run_until_idle())
    elapsed = time.perf_counter() - start
    done = [jobs.get(i) for i in ids]
    assert all(j.state == "completed" for j in done)
    waits = [j.finished_at - j.created_at for j in done]  # type: ignore[operator]
    single = []
    for _ in range(ONE_AT_A_TIME):
        job = jobs.create("what changed?")
        asyncio.run(job_runner(jobs, concurrency=1).run_until_idle())
        finished = jobs.get(job.id)
        single.append(finished.finished_at - finished.created_at)  # type: ignore[operator]
    return [
        (f"{JOBS} read-only jobs, {CONCURRENCY} at once", f"{JOBS / elapsed:.1f} jobs/s"),
        ("queue-to-done p50 / p95 (bulk)", f"{_pct(waits, 50):.0f} / {_pct(waits, 95):.0f} ms"),
        (
            "queue-to-done p50 / p95 (one at a time)",
            f"{_pct(single, 50):.1f} / {_pct(single, 95):.1f} ms",
        ),
    ]


def _appends(jobs: Jobs) -> list[tuple[str, str]]:
    job = jobs.create("what changed?")
    payload = {"step": "git_status", "stdout": "M f0.txt\n" * 20}
    samples = []
    for _ in range(APPENDS):
        start = time.perf_counter()
        jobs.store.append(job.id, "step_finished", payload)
        samples.append(time.perf_counter() - start)
    return [("event append p50 / p99", f"{_pct(samples, 50):.2f} / {_pct(samples, 99):.2f} ms")]


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone, possibly while being read
        return False


def _aborts(jobs: Jobs) -> list[tuple[str, str]]:
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    runner = job_runner(jobs, concurrency=1)
    worker = threading.Thread(target=loop.run_until_complete, args=(runner.serve(stop),))
    worker.start()
    samples = []
    try:
        for _ in range(ABORTS):
            job = jobs.create("run the tests")
            pid = None
            while pid is None:
                found = [e for e in jobs.events(job.id) if e.payload.get("step") == "test"]
                pid = found[0].payload["pid"] if found else None
                time.sleep(0.005)
            time.sleep(0.05)
            jobs.abort(job.id, "bench")
            start = time.perf_counter()
            while _alive(pid):
                time.sleep(0.001)
            samples.append(time.perf_counter() - start)
    finally:
        loop.call_soon_threadsafe(stop.set)
        worker.join()
    return [
        (
            f"abort -> process gone p50 / p99 ({ABORTS} aborts)",
            f"{_pct(samples, 50):.0f} / {_pct(samples, 99):.0f} ms",
        )
    ]


def run() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = Settings(
            home=root / "home",
            tools={"root": _repo(root), "commands": ["git", "sleep"]},
            jobs={"test_command": "sleep 60"},
        )
        jobs = open_jobs(settings)
        rows = _throughput(jobs) + _appends(jobs) + _aborts(jobs)
        jobs.close()
    return table("Jobs (SQLite jobs.db, git in a 2-commit repository)", ["measure", "value"], rows)


if __name__ == "__main__":
    run()
