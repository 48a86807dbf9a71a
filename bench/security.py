"""The worst a single request of at most 64 KB can cost ``heron serve`` (issue 33).

A server subprocess on loopback (the bundled local model, a fresh HERON_HOME); each
attack is sent once, alone, and the server's CPU time (user + system, psutil) and its
peak resident memory above the level before the request (sampled every 5 ms) are
measured. Target: at most 100 MB and 2 s of CPU each.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from typing import Any

import httpx
import psutil

from bench.common import table
from bench.server import start_server

LIMIT = 64 * 1024


def schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}


def chat(**fields: Any) -> dict[str, Any]:
    body = {"model": "local", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    return body | fields


def attacks() -> list[tuple[str, str, dict[str, Any]]]:
    """(what, path, body): each body is at most ``LIMIT`` bytes of JSON."""
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "ok"} for i in range(1600)]
    strings = {f"p{i}": {"type": "string", "maxLength": 9000} for i in range(12)}
    optional = {f"p{i}": {"type": "string"} for i in range(300)}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20):
        deep = {"type": "array", "items": deep}
    return [
        (
            "minLength 20,000,000",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "string", "minLength": 20_000_000})),
        ),
        (
            "maxLength 1,999 (was a segfault)",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "string", "maxLength": 1999})),
        ),
        (
            "12 strings of maxLength 9,000",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "object", "properties": strings})),
        ),
        (
            "300 optional properties",
            "/v1/chat/completions",
            chat(response_format=schema_format({"type": "object", "properties": optional})),
        ),
        (
            "nested arrays, depth 20",
            "/v1/chat/completions",
            chat(response_format=schema_format(deep)),
        ),
        (
            "forced tool, maxItems 10,000",
            "/v1/chat/completions",
            chat(
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "f",
                            "parameters": {
                                "type": "object",
                                "properties": {"x": {"type": "array", "maxItems": 10000}},
                            },
                        },
                    }
                ],
                tool_choice={"type": "function", "function": {"name": "f"}},
            ),
        ),
        (
            "1,600 short turns",
            "/v1/chat/completions",
            chat(messages=[*turns, {"role": "user", "content": "hi"}]),
        ),
        (
            "one 60 KB message",
            "/v1/chat/completions",
            chat(messages=[{"role": "user", "content": "word " * 12_000}]),
        ),
        (
            "embeddings: 2,048 short inputs",
            "/v1/embeddings",
            {"model": "m", "input": ["pods and nodes"] * 2048},
        ),
        (
            # Issue 45: 2,048 estimated tokens, within the cap, and 7.8-9.4 s of CPU.
            "embeddings: 2,048 two-character inputs",
            "/v1/embeddings",
            {"model": "m", "input": ["ab"] * 2048},
        ),
        (
            # The most texts the pair takes, however short (heron.server.embeddings.PER_TEXT).
            "embeddings: 180 two-character inputs",
            "/v1/embeddings",
            {"model": "m", "input": ["ab"] * 180},
        ),
        (
            "embeddings: one 60 KB input",
            "/v1/embeddings",
            {"model": "m", "input": ["word " * 12_000]},
        ),
        (
            "embeddings: 24 KB in 96 texts",
            "/v1/embeddings",
            {"model": "m", "input": ["the scheduler binds pods " * 10] * 96},
        ),
        (
            # The most the token cap lets the multilingual pair embed: 24 texts of about 84
            # estimated tokens and 12 each (PER_TEXT) at its cost of 3.5
            # (heron.embed.multilingual.COST), 8,064 of 8,192.
            "embeddings: 6 KB in 24 texts",
            "/v1/embeddings",
            {"model": "m", "input": ["the scheduler binds pods " * 10] * 24},
        ),
        (
            "rpc agent.chat, 60 KB message",
            "/rpc",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "agent.chat",
                "params": {"message": "word " * 12_000, "answer": "extractive"},
            },
        ),
        (
            "rpc batch of 100 search.query",
            "/rpc",
            [
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "search.query",
                    "params": {"query": "pods " * 100},
                }
                for i in range(100)
            ],
        ),
    ]


def measure(
    proc: psutil.Process, url: str, path: str, body: Any
) -> tuple[int, float, float, float]:
    """(status, seconds, CPU seconds, peak MB above the level before)."""
    base = proc.memory_info().rss
    peak = base
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, proc.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    cpu = proc.cpu_times()
    started = time.perf_counter()
    sampler.start()
    try:
        status = httpx.post(url + path, json=body, timeout=300).status_code
    finally:
        done.set()
        sampler.join()
    after = proc.cpu_times()
    used = after.user + after.system - cpu.user - cpu.system
    return status, time.perf_counter() - started, used, (peak - base) / 1e6


def run() -> str:
    home = tempfile.mkdtemp(prefix="heron-security-")
    server, url = start_server({"HERON_HOME": home, "HERON_LIBRARY_DEFAULT_DOCS": "true"})
    rows = []
    try:
        proc = psutil.Process(server.pid)
        # What the first requests load once (the model, the docs library's index, the
        # grammar code) is the server's, not an attack's: each path is warmed first.
        for warm in (
            chat(),
            chat(response_format=schema_format({"type": "string", "maxLength": 16})),
            chat(response_format=schema_format({"type": "string", "maxLength": 1500})),
        ):
            httpx.post(url + "/v1/chat/completions", json=warm, timeout=300)
        httpx.post(url + "/v1/embeddings", json={"model": "m", "input": ["warm"]}, timeout=300)
        for what, path, body in attacks():
            size = len(json.dumps(body).encode())
            assert size <= LIMIT, (what, size)
            status, seconds, cpu, mb = measure(proc, url, path, body)
            rows.append(
                (
                    what,
                    path,
                    f"{size / 1024:.1f}",
                    status,
                    f"{seconds:.2f}",
                    f"{cpu:.2f}",
                    f"{mb:.1f}",
                )
            )
    finally:
        server.terminate()
        server.wait(30)
    return table(
        "The worst single requests of at most 64 KB",
        ["attack", "route", "KB", "status", "s", "CPU s", "peak MB"],
        rows,
    )
