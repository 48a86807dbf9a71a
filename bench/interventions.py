"""Interventions: card latency over SSE, a storm, voice, and stats over 10,000 stored.

1. **Raised -> card.** A real ``heron serve`` on loopback (a fresh ``HERON_HOME``,
   cooldown 0 so that each condition goes out); one SSE client follows the room; 300
   conditions with distinct keys are raised over JSON-RPC, one at a time, and each is
   timed from just before its ``interventions.raise`` request to the moment the client
   has parsed its card. Targets: p50 <= 50 ms, p99 <= 200 ms.
2. **Storm.** 1,000 identical conditions (one key, one room) from 20 threads, through
   two stores on one database (as two server processes would), on SQLite and on
   PostgreSQL; then the key is resolved and raised once more. Target: exactly 1
   delivered, 999 suppressed (counted, not stored: 1 stored), and the one after the
   resolve delivered.
3. **Voice.** A 20-word critical line through espeak-ng (``EspeakVoice``), median of 5.
   Target: <= 2 s.
4. **Stats.** 10,000 interventions stored (5 kinds, guard and cooldown suppressions,
   outcomes), then ``stats()`` 50 times: p50 and max. Target: <= 100 ms.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from bench.common import table
from bench.parity import postgres_url
from bench.server import start_server
from heron.db import SQLiteDatabase
from heron.db.postgres import PostgresDatabase
from heron.interventions import (
    INTERVENTIONS,
    Condition,
    EspeakVoice,
    InterventionStore,
    Rendered,
    SQLInterventionStore,
)

CARDS = 300
STORM = 1000
THREADS = 20
STATS_ROWS = 10_000
LINE = (
    "Alert. The payment service health check has failed three times in a row; "
    "please look at the database connections now."
)


def _latency(home: Path) -> tuple[float, float]:
    proc, url = start_server(
        {"HERON_HOME": str(home), "HERON_INTERVENTIONS_COOLDOWN": "0", "HERON_EMBED_CACHE": "true"}
    )
    received: dict[int, float] = {}
    ready = threading.Event()

    def follow() -> None:
        with httpx.stream("GET", f"{url}/interventions/stream?room=bench", timeout=60) as r:
            ready.set()
            for line in r.iter_lines():
                if line.startswith("data: "):
                    received[json.loads(line[6:])["id"]] = time.perf_counter()
                    if len(received) >= CARDS:
                        return

    client = threading.Thread(target=follow, daemon=True)
    client.start()
    ready.wait(30)
    samples = []
    try:
        with httpx.Client(timeout=30) as http:
            for n in range(CARDS):
                params = {"kind": "notice", "key": f"n{n}", "room": "bench",
                          "facts": {"message": f"card {n}"}}  # fmt: skip
                body = {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "interventions.raise",
                    "params": params,
                }
                start = time.perf_counter()
                sent = http.post(f"{url}/rpc", json=body).json()["result"]["id"]
                while sent not in received and time.perf_counter() - start < 5:
                    time.sleep(0.0005)
                samples.append(received.get(sent, float("inf")) - start)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    ms = np.array(samples) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def _words(seen: int) -> Rendered:
    return Rendered("Conflict: alice + bob both on README.md.", "Heads up.")


def _storm(pair: list[InterventionStore]) -> tuple[Counter[str], int, str, float]:
    condition = Condition("collision", "collision:README.md", "team", "warning", {})

    def one(n: int) -> str:
        return pair[n % 2].raise_(condition, _words, cooldown=180).status

    start = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        statuses = Counter(pool.map(one, range(STORM)))
    elapsed = time.perf_counter() - start
    stored = len(pair[0].list(limit=STORM * 2))
    pair[1].resolve("team", "collision:README.md")
    after = pair[0].raise_(condition, _words, cooldown=180).status
    return statuses, stored, after, elapsed


def _voice(folder: Path) -> float:
    voice = EspeakVoice(folder)
    assert len(LINE.split()) == 20
    times = []
    for n in range(5):
        start = time.perf_counter()
        voice.render(LINE, f"{n}.wav")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _stats(store: InterventionStore) -> tuple[float, float]:
    kinds = ["collision", "research_overlap", "job_waiting", "watchdog_incident", "notice"]
    for n in range(STATS_ROWS):
        key = f"k{n // 3}"  # every key raised 3 times: 1 delivered, then the guard
        condition = Condition(kinds[n % 5], key, f"room{n % 40}", "warning", {"n": n})
        sent = store.raise_(condition, _words, cooldown=0 if n % 7 else 180)
        if sent.delivered and n % 4 == 0:
            store.outcome(sent.id, "accept" if n % 8 == 0 else "dismiss", "bench")
    times = []
    for _ in range(50):
        start = time.perf_counter()
        store.stats()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, max(times) * 1000


def run() -> str:
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        p50, p99 = _latency(root / "home")
        rows.append(("raised -> card on SSE, p50", f"{p50:.1f} ms", "<= 50 ms"))
        rows.append(("raised -> card on SSE, p99", f"{p99:.1f} ms", "<= 200 ms"))

        pg = postgres_url(f"interventions_{os.getpid()}")
        backends = {
            "SQLite": lambda: SQLInterventionStore(
                SQLiteDatabase(root / "storm.db", INTERVENTIONS)
            ),
            "PostgreSQL": lambda: SQLInterventionStore(
                PostgresDatabase(pg, INTERVENTIONS, pool_size=10)
            ),
        }
        for name, open_store in backends.items():
            pair = [open_store(), open_store()]
            try:
                statuses, stored, after, elapsed = _storm(pair)
            finally:
                for store in pair:
                    store.close()
            got = (
                f"{statuses['delivered']} delivered, {statuses['suppressed_guard']} suppressed, "
                f"{stored} stored in {elapsed:.2f} s; after resolve: {after}"
            )
            rows.append((f"storm of {STORM} from {THREADS} threads, {name}", got,
                         "1 delivered, 999 suppressed, 1 stored; delivered"))  # fmt: skip

        rows.append(
            ("voice, 20-word line (espeak-ng)", f"{_voice(root / 'audio'):.3f} s", "<= 2 s")
        )
        store = SQLInterventionStore(SQLiteDatabase(root / "stats.db", INTERVENTIONS))
        try:
            median, worst = _stats(store)
        finally:
            store.close()
        rows.append((f"stats over {STATS_ROWS:,} stored, p50", f"{median:.1f} ms", "<= 100 ms"))
        rows.append(
            (f"stats over {STATS_ROWS:,} stored, max of 50", f"{worst:.1f} ms", "<= 100 ms")
        )
    return table("Interventions", ["figure", "measured", "target"], rows)
