"""Shared bits of the benchmarks: data paths, timing, tables, nDCG."""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

SHARED = Path(
    os.environ.get("HERON_SHARED") or Path(__file__).resolve().parents[1] / ".." / "shared"
)
SCIFACT = SHARED / "data" / "docs" / "scifact"
WORK = Path(os.environ.get("HERON_BENCH_DIR") or Path(__file__).resolve().parents[1] / ".bench")
DATA = Path(__file__).with_name("data")
#: The languages of the hand-translated sets (``bench/data/NAME_{pt,es}.jsonl``).
LANGUAGES = ("en", "pt", "es")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def translated(name: str) -> dict[str, list[dict[str, Any]]]:
    """``{language: items}`` of the translated set ``name``, English taken from the
    translations' ``en`` field, so each language is scored on the same items."""
    out = {}
    for lang in LANGUAGES[1:]:
        out[lang] = [row for row in read_jsonl(DATA / f"{name}_{lang}.jsonl") if "id" in row]
    out["en"] = [{**row, "text": row["en"], "question": row["en"]} for row in out["pt"]]
    return out


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table, printed and returned so the caller can save it."""
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    lines = [
        f"### {title}",
        "",
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 in milliseconds."""
    ms = np.array(samples) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def ndcg_at_10(ranked: Sequence[str], relevant: set[str]) -> float:
    """Binary-gain nDCG@10, as BEIR / pytrec_eval compute it."""
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal if ideal else 0.0


def serve(
    env: dict[str, str], log: Path, *, until: str = "/health"
) -> tuple[subprocess.Popen[bytes], str]:
    """``heron serve`` with ``env`` on a free loopback port, its stderr in ``log``, once it
    answers ``until`` (``/ready``: its models loaded too): the process and its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "heron", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stderr=open(log, "wb"),  # noqa: SIM115 -- the server owns it
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError(f"heron serve exited; see {log}")
        try:
            if httpx.get(f"{url}{until}", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("heron serve did not start in 2 minutes")
