"""Counters and latency histograms in the Prometheus text format, written by hand.

``Metrics.observe("rpc", "search.query", 0.012, ok=True)`` counts one call and files its
latency; ``render(gauges)`` gives the exposition (format 0.0.4, see
https://prometheus.io/docs/instrumenting/exposition_formats/)::

    heron_requests_total{kind="rpc",name="search.query",outcome="ok"} 1
    heron_request_seconds_bucket{kind="rpc",name="search.query",le="0.025"} 1
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from dataclasses import dataclass, field

#: Upper bounds in seconds: retrieval lands in the first half, model calls in the second.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def add(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.total += seconds

    def lines(self, metric: str, labels: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip((*BUCKETS, float("inf")), self.counts, strict=True):
            running += count
            le = "+Inf" if bound == float("inf") else repr(bound)
            out.append(f'{metric}_bucket{{{labels},le="{le}"}} {running}')
        out.append(f"{metric}_sum{{{labels}}} {self.total:.6f}")
        out.append(f"{metric}_count{{{labels}}} {running}")
        return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Thread-safe: handlers in the threadpool and on the event loop both report here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = defaultdict(int)
        self._latency: dict[tuple[str, str], Histogram] = defaultdict(Histogram)
        self._model: dict[str, Histogram] = defaultdict(Histogram)

    def observe(self, kind: str, name: str, seconds: float, *, ok: bool) -> None:
        with self._lock:
            self._counts[kind, name, "ok" if ok else "error"] += 1
            self._latency[kind, name].add(seconds)

    def observe_model(self, model: str, seconds: float) -> None:
        with self._lock:
            self._model[model].add(seconds)

    def render(self, gauges: dict[str, list[tuple[dict[str, str], float]]]) -> str:
        """The exposition; ``gauges`` maps a metric name to ``(labels, value)`` samples."""
        lines = [
            "# HELP heron_requests_total Requests answered, by kind, name and outcome.",
            "# TYPE heron_requests_total counter",
        ]
        with self._lock:
            for (kind, name, outcome), count in sorted(self._counts.items()):
                lines.append(
                    f'heron_requests_total{{kind="{kind}",name="{_label(name)}",'
                    f'outcome="{outcome}"}} {count}'
                )
            lines += [
                "# HELP heron_request_seconds Request latency in seconds.",
                "# TYPE heron_request_seconds histogram",
            ]
            for (kind, name), hist in sorted(self._latency.items()):
                labels = f'kind="{kind}",name="{_label(name)}"'
                lines += hist.lines("heron_request_seconds", labels)
            lines += [
                "# HELP heron_model_call_seconds Chat model calls, whole answer, in seconds.",
                "# TYPE heron_model_call_seconds histogram",
            ]
            for model, hist in sorted(self._model.items()):
                lines += hist.lines("heron_model_call_seconds", f'model="{_label(model)}"')
        for metric, samples in gauges.items():
            lines.append(f"# TYPE {metric} gauge")
            for labels, value in samples:
                text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
                lines.append(f"{metric}{{{text}}} {value:g}")
        return "\n".join(lines) + "\n"
