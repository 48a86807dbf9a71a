"""Replicas on one PostgreSQL (issue 47): the same 200 mixed requests through one ``heron
serve`` and through two behind a round-robin client, then a replica killed mid-job.

Two ``heron serve`` processes, each with its own ``HERON_HOME`` and ``HERON_REPLICA``,
on one database of the benchmark's PostgreSQL (``bench.parity.postgres_url``), answering
from a library of eight of Heron's own docs pages (indexed once, through the first
replica: the records are the database's) with the default, extractive answers:

1. **Mixed load.** 200 requests from 8 client threads: 100 ``search.query``, 30
   conversations of two ``agent.chat`` turns (the follow-up names the first's session, so
   round-robin sends it to the other replica), 40 read-only ``jobs.create``. Once through
   replica a alone, once alternating a and b. Requests/s and the ratio two/one, p50 and
   p95 of each request, then, from the database: requests lost (an error, or a turn
   missing from its conversation), turns or job runs duplicated, and the seconds until
   every job completed.
2. **Takeover.** A build job (a command that sleeps) on one replica, which is killed
   with SIGKILL; the seconds until the other has failed the job with the reason, at the
   default ``HERON_JOBS_VISIBILITY_TIMEOUT`` (20 s; target: 30 s at most).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg

from bench.common import WORK, serve, table
from bench.jobs import _repo
from bench.parity import postgres_url
from heron.settings import JobsSettings

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    "overview.md",
    "jobs.md",
    "postgres.md",
    "server.md",
    "security.md",
    "tools.md",
    "skills.md",
    "web.md",
)
QUESTIONS = (
    "How does a job recover when its worker dies?",
    "What does the PostgreSQL store use for lexical search?",
    "How are API keys limited?",
    "Which scopes does a key have?",
    "How does the web page sign in?",
    "What is a skill?",
    "How are tools picked for a question?",
    "What does heron serve listen on by default?",
    "How is a chat stream resumed?",
    "What does the doctor check?",
)
FOLLOW_UPS = ("And how is that configured?", "Why is that so?", "Where is that documented?")
CLIENTS = 8
#: The default HERON_JOBS_VISIBILITY_TIMEOUT, which the takeover runs at.
VISIBILITY = JobsSettings.model_fields["visibility_timeout"].default
SEARCHES, CONVERSATIONS, JOBS = 100, 30, 40


def _rpc(url: str, method: str, **params: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = httpx.post(url + "/rpc", json=body, timeout=300).json()
    took = time.perf_counter() - started
    if "result" not in answer:
        raise RuntimeError(f"{method}: {answer.get('error')}")
    return answer["result"], took


def _load(urls: list[str], tag: str) -> dict[str, Any]:
    """The 200 requests, spread over ``urls`` in turn; what came back of them."""
    turn = iter(range(10**9))

    def pick() -> str:
        return urls[next(turn) % len(urls)]

    def search(n: int) -> float:
        return _rpc(pick(), "search.query", query=QUESTIONS[n % len(QUESTIONS)], top_k=5)[1]

    def converse(n: int) -> tuple[str, float, float]:
        first, took = _rpc(pick(), "agent.chat", message=QUESTIONS[n % len(QUESTIONS)])
        session = first["session_id"]
        follow = FOLLOW_UPS[n % len(FOLLOW_UPS)]
        _, again = _rpc(pick(), "agent.chat", message=follow, session_id=session)
        return session, took, again

    def job(n: int) -> tuple[str, float]:
        made, took = _rpc(pick(), "jobs.create", prompt=f"what changed? ({tag} {n})")
        return made["id"], took

    work: list[tuple[str, int]] = (
        [("search", n) for n in range(SEARCHES)]
        + [("chat", n) for n in range(CONVERSATIONS)]
        + [("job", n) for n in range(JOBS)]
    )
    work.sort(key=lambda item: (item[1] % 7, item[0]))  # kinds interleaved
    latencies: list[float] = []
    sessions: list[str] = []
    job_ids: list[str] = []
    errors = 0

    def one(item: tuple[str, int]) -> None:
        nonlocal errors
        kind, n = item
        try:
            if kind == "search":
                latencies.append(search(n))
            elif kind == "chat":
                session, took, again = converse(n)
                sessions.append(session)
                latencies.extend((took, again))
            else:
                job_id, took = job(n)
                job_ids.append(job_id)
                latencies.append(took)
        except (RuntimeError, httpx.HTTPError):
            errors += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(one, work))
    elapsed = time.perf_counter() - started
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        states = Counter(_rpc(urls[0], "jobs.get", id=j)[0]["state"] for j in job_ids)
        if states["completed"] == len(job_ids):
            break
        time.sleep(0.5)
    jobs_done = time.perf_counter() - started
    turns = [len(_rpc(urls[-1], "agent.history", session_id=s)[0]) for s in sessions]
    return {
        "requests": len(latencies),
        "errors": errors,
        "seconds": elapsed,
        "latencies": latencies,
        "turns": turns,
        "job_ids": job_ids,
        "jobs_done": jobs_done,
        "states": states,
    }


def _claims(url: str, job_ids: list[str]) -> Counter[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT job_id, count(*) FROM heron_job_events WHERE kind = 'claimed' "
            "AND job_id = ANY(%s) GROUP BY job_id",
            (job_ids,),
        ).fetchall()
    return Counter(n for _, n in rows)


def _takeover(servers: list[tuple[subprocess.Popen[bytes], str]]) -> tuple[float, str]:
    """Seconds from the SIGKILL of the replica running a build to its failure elsewhere."""
    url = servers[0][1]
    build, _ = _rpc(url, "jobs.create", prompt="is the build broken?")
    pid = None
    while pid is None:
        time.sleep(0.1)
        held = _rpc(url, "jobs.get", id=build["id"])[0]
        started = [
            e["payload"]["pid"]
            for e in _rpc(url, "jobs.events", id=build["id"])[0]
            if e["kind"] == "step_started" and e["payload"].get("step") == "test"
        ]
        pid = started[0] if started and held["state"] == "running" else None
    holder = 0 if held["worker"].startswith("replica-a:") else 1
    survivor = servers[1 - holder][1]
    servers[holder][0].send_signal(signal.SIGKILL)
    servers[holder][0].wait()
    killed = time.perf_counter()
    while _rpc(survivor, "jobs.get", id=build["id"])[0]["state"] == "running":
        time.sleep(0.2)
    took = time.perf_counter() - killed
    last = _rpc(survivor, "jobs.events", id=build["id"])[0][-1]
    os.killpg(pid, signal.SIGKILL)  # the dead replica's command (its own process group)
    return took, f"{last['kind']}: {last['payload'].get('reason', '')}"


def run() -> str:
    url = postgres_url(f"replicas_{os.getpid()}")
    out = WORK / "replicas"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for page in PAGES:
            shutil.copy(ROOT / "docs" / page, docs / page)
        base = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")} | {
            "HERON_DATABASE_URL": url,
            "HERON_EMBEDDER": "minilm",
            "HERON_LIBRARY_DEFAULT_DOCS": "false",
            "HERON_TOOLS_ROOT": str(_repo(Path(tmp))),
            "HERON_TOOLS_COMMANDS": '["git", "sh", "sleep"]',
            "HERON_JOBS_TEST_COMMAND": "sh -c 'sleep 120 & wait'",
        }
        base |= {"HERON_LIBRARY_ROOTS": f'["{docs}"]'}

        def start(name: str) -> tuple[subprocess.Popen[bytes], str]:
            env = base | {"HERON_HOME": f"{tmp}/{name}", "HERON_REPLICA": name}
            return serve(env, out / f"{name}.log")

        servers = [start("replica-a")]
        try:
            first = servers[0][1]
            _rpc(first, "library.add", name="heron-docs", source=str(docs))
            _rpc(first, "library.index", name="heron-docs")
            one = _load([first], "one")  # b not started: a runs every job too
            servers.append(start("replica-b"))
            two = _load([url for _, url in servers], "two")
            took, why = _takeover(servers)
        finally:
            for proc, _ in servers:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(60)
    rows = []
    for name, got in (("one replica", one), ("two, round-robin", two)):
        claims = _claims(url, got["job_ids"])
        lat = np.array(got["latencies"]) * 1000
        lost = got["errors"] + sum(1 for n in got["turns"] if n < 2)
        duplicated = sum(1 for n in got["turns"] if n > 2) + sum(
            count for runs, count in claims.items() if runs > 1
        )
        rows.append(
            (
                name,
                got["requests"],
                round(got["requests"] / got["seconds"], 2),
                round(float(np.percentile(lat, 50)), 1),
                round(float(np.percentile(lat, 95)), 1),
                lost,
                duplicated,
                round(got["jobs_done"], 1),
            )
        )
    ratio = rows[1][2] / rows[0][2]
    load = (
        table(
            f"200 mixed requests (100 searches, 30 two-turn conversations, 40 jobs), "
            f"{CLIENTS} clients: two/one throughput {ratio:.2f}",
            [
                "through",
                "requests",
                "req/s",
                "p50 ms",
                "p95 ms",
                "lost",
                "duplicated",
                "jobs done s",
            ],
            rows,
        )
        + "\n"
    )
    return load + table(
        "A replica killed (SIGKILL) mid-job: the other takes the job over",
        ["visibility timeout s", "taken over after s", "last event"],
        [(VISIBILITY, round(took, 1), why[:90])],
    )
