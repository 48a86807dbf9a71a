"""``heron serve`` under load, from this process to a server subprocess on loopback.

1. ``search.query`` over JSON-RPC on the indexed Kubernetes library (``.bench/books``,
   built by ``python -m bench libraries``): one client for 10 s (the service time), then 50
   concurrent clients for 30 s, each sending the next question as soon as its last answer
   arrived. Requests/s, p50/p99, errors, and the machine's load average (it is shared).
2. ``/v1/chat/completions`` with ``stream: true`` on the bundled local model, one
   request at a time: time to the first content chunk (p50) and to ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

import httpx
import numpy as np

from bench import libraries as books
from bench.common import WORK, read_jsonl, serve, table

CLIENTS = 50
SECONDS = 30.0
CHATS = 5
#: Answers cut short: the figure is the time to the first token, not the answer.
MAX_TOKENS = 32


def start_server(extra: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``heron serve`` on a free loopback port, on the ``bench libraries`` index unless
    ``extra`` (environment variables) says otherwise."""
    (WORK / "server").mkdir(parents=True, exist_ok=True)
    env = os.environ | {
        "HERON_HOME": str(books.ROOT / "home"),
        "HERON_LIBRARY_DEFAULT_DOCS": "false",
        "HERON_MODEL": "local",
        "HERON_AGENT_MAX_TOKENS": str(MAX_TOKENS),
        "HERON_EMBED_CACHE": "false",  # every query embedded, as unique queries would be
        **(extra or {}),
    }
    return serve(env, WORK / "server" / f"server-{time.time_ns()}.log")


async def search_load(
    url: str, questions: list[str], clients: int, seconds: float
) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0

    async def client(offset: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        n = offset
        while time.perf_counter() < stop:
            body = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "search.query",
                "params": {"query": questions[n % len(questions)], "library": "kubernetes"},
            }
            start = time.perf_counter()
            try:
                response = await http.post(f"{url}/rpc", json=body)
                ok = response.status_code == 200 and "result" in response.json()
            except httpx.HTTPError:
                ok = False
            latencies.append(time.perf_counter() - start)
            errors += not ok
            n += clients

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        # One warm-up query loads the vector index before the clock starts.
        await http.post(
            f"{url}/rpc",
            json={"jsonrpc": "2.0", "id": 0, "method": "search.query",
                  "params": {"query": questions[0], "library": "kubernetes"}},
        )  # fmt: skip
        began = time.perf_counter()
        stop = began + seconds
        await asyncio.gather(*(client(i, http) for i in range(clients)))
        elapsed = time.perf_counter() - began
    return latencies, errors, elapsed


def chat_latency(url: str, questions: list[str]) -> tuple[list[float], list[float], int]:
    first, whole, errors = [], [], 0
    with httpx.Client(timeout=600) as http:
        for question in questions[:CHATS]:
            body = {
                "model": "local",
                "messages": [{"role": "user", "content": question}],
                "stream": True,
                "library": "kubernetes",
            }
            start = time.perf_counter()
            seen = None
            try:
                with http.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
                    for line in response.iter_lines():
                        if seen is None and '"content": "' in line and '"content": ""' not in line:
                            seen = time.perf_counter() - start
                        if '"error"' in line:
                            errors += 1
            except httpx.HTTPError:
                errors += 1
                continue
            whole.append(time.perf_counter() - start)
            if seen is not None:
                first.append(seen)
    return first, whole, errors


def ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples) * 1000, q)) if samples else float("nan")


def run() -> str:
    books.initial_index()
    questions = [q["question"] for q in read_jsonl(books.K8S / "questions.jsonl")]
    proc, url = start_server()
    try:
        rows = []
        for clients, seconds in ((1, 10.0), (CLIENTS, SECONDS)):
            latencies, errors, elapsed = asyncio.run(search_load(url, questions, clients, seconds))
            rows.append(
                (clients, seconds, len(latencies), errors, len(latencies) / elapsed,
                 ms(latencies, 50), ms(latencies, 99), os.getloadavg()[0])
            )  # fmt: skip
        out = table(
            "search.query over /rpc, Kubernetes library (885 pages), loopback, embedding "
            "cache off",
            ["clients", "seconds", "requests", "errors", "requests/s", "p50 ms", "p99 ms",
             "load avg"],
            rows,
        )  # fmt: skip
        first, whole, chat_errors = chat_latency(url, questions)
        out += table(
            f"/v1/chat/completions, stream, local model (SmolLM2-135M, {MAX_TOKENS} tokens max), "
            f"{CHATS} requests one at a time",
            ["requests", "errors", "p50 first token ms", "p50 whole answer ms"],
            [(len(whole), chat_errors, ms(first, 50), ms(whole, 50))],
        )
    finally:
        proc.terminate()
        proc.wait(60)
    return out


if __name__ == "__main__":
    run()
