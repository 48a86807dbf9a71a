"""The server's Prometheus metrics, through ``prometheus_client``, one registry per app.

Families (Prometheus naming: counters end ``_total``, durations are ``_seconds``)::

    heron_http_requests_total{route,method,status}     route template, HTTP status code
    heron_http_request_duration_seconds{route,method}  histogram
    heron_rpc_calls_total{method,outcome}              JSON-RPC, outcome ok|error
    heron_rpc_call_duration_seconds{method}
    heron_model_answer_duration_seconds{model}         a whole chat answer
    heron_model_tokens_total{model,direction}          direction in|out
    heron_model_retries_total{model}, heron_model_fallbacks_total{model}
    heron_model_cooldowns_total{model}, heron_model_probes_total{model}
    heron_model_cooling{model}                         1 cooling down, 0 not (at scrape)
    heron_tool_calls_total{tool,outcome}               outcome ok|error|refused
    heron_answer_stage_duration_seconds{stage}         retrieval, routing, skills, model ...
    heron_search_duration_seconds{mode}                search.query, by search mode
    heron_key_requests_total{key,outcome}              per API key: ok|limited|forbidden
    heron_key_tokens_total{key,direction}              per API key, direction in|out
    heron_spend_dollars_total{key,context,model}       what model calls cost (heron.llm.prices)
    heron_model_cache_hits_total{model}, heron_model_cache_misses_total{model}
    heron_cache_saved_dollars_total{model}             what the cache's hits did not spend
    heron_index_records{namespace}, heron_jobs{state}  read at each scrape
    heron_watchdog_check_status{check}                 1 passing, 0 failing (watchdog-latest.json)
    heron_build_info{version,python,implementation}, process_*, python_info, python_gc_*

Every label comes from a bounded set, so no request can grow the series without end: a
key is an API key's name (``heron.keys``; ``HERON_API_TOKEN`` for that token), as many
values as keys; a route is the template that matched (``/jobs/{id}/events/stream``),
never the raw path (a request no route took is ``route="unmatched"``); a method outside
the HTTP ones is ``OTHER``; a JSON-RPC method is a registered one; a tool is one the
toolbox has registered and a model an alias of the models table, anything else (a tool
name a model invented, a model a client named) is ``unknown``; stages and search modes
are Heron's own.

**Who sees which series** (``heron.tenancy``): the server's administrator, all of them;
any other caller (``view``) only what its context owns: ``heron_index_records`` of its
context's namespaces, the ``key`` series of its own key, and ``heron_jobs`` (the default
context's jobs) only in the default context. A library's or a key's name is its
owner's, and no label value of another context's reaches that caller.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from heron import __version__

if TYPE_CHECKING:
    from heron.agent.answer import Answer

#: Upper bounds in seconds: retrieval lands in the first half, model calls in the second.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: The label of a tool or model no registry knows.
UNKNOWN = "unknown"
#: Gauges read at scrape time: ``name -> ((labels, value), ...)``.
Gauges = dict[str, list[tuple[dict[str, str], float]]]
#: Whether one sample (its family's name, its labels) is shown to the caller.
Keep = Callable[[str, Mapping[str, str]], bool]


def view(namespaces: Collection[str], key: str | None, *, jobs: bool) -> Keep:
    """What a caller who does not see everything is shown (the module): the
    ``namespaces`` of its context, the series of its ``key`` (its name; ``None``: none),
    and ``heron_jobs`` when ``jobs``."""

    def keep(family: str, labels: Mapping[str, str]) -> bool:
        if "namespace" in labels:
            return labels["namespace"] in namespaces
        if "key" in labels:
            return labels["key"] == key
        return jobs or family != "heron_jobs"

    return keep


class _Kept(Collector):
    """A registry's families with only the samples ``keep`` keeps (``Metrics.render``)."""

    def __init__(self, registry: CollectorRegistry, keep: Keep) -> None:
        self.registry = registry
        self.keep = keep

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            kept = Metric(family.name, family.documentation, family.type, family.unit)
            kept.samples = [s for s in family.samples if self.keep(family.name, s.labels)]
            yield kept


class _ScrapeCollector(Collector):
    """Gauges whose values live elsewhere (the store, the job queue, a file), read when
    Prometheus scrapes instead of kept up to date."""

    HELP: ClassVar[dict[str, str]] = {
        "heron_index_records": "Records in each store namespace.",
        "heron_jobs": "Jobs in each state.",
        "heron_watchdog_check_status": "Last watchdog run: 1 if the check passed, else 0.",
        "heron_model_cooling": "1 while the model is cooling down after failures, else 0.",
    }

    def __init__(self, read: Callable[[], Gauges]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        for name, samples in self.read().items():
            labels = sorted({key for sample, _ in samples for key in sample})
            family = GaugeMetricFamily(name, self.HELP.get(name, name), labels=labels)
            for sample, value in samples:
                family.add_metric([sample.get(key, "") for key in labels], value)
            yield family

    def describe(self) -> Iterable[Metric]:
        return []  # values unknown until scraped: nothing to check at registration


def _standard(registry: CollectorRegistry) -> None:
    """The process's, the platform's and the garbage collector's families, and
    ``heron_build`` (the running version)."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    Info("heron_build", "The running Heron.", registry=registry).info(
        {
            "version": __version__,
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
        }
    )


class Metrics:
    """Thread-safe (``prometheus_client`` locks each value): handlers in the threadpool
    and on the event loop both report here. ``tools()`` and ``models()``: the names a
    tool or model label may take, read at each report (a reload may change them)."""

    def __init__(
        self,
        *,
        tools: Callable[[], Container[str]] = frozenset,
        models: Callable[[], Container[str]] = frozenset,
    ) -> None:
        self.known_tools = tools
        self.known_models = models
        self.registry = CollectorRegistry()
        _standard(self.registry)
        # Names without _total: prometheus_client adds it to counters.
        self.http = self._counter(
            "heron_http_requests", "HTTP requests answered.", "route", "method", "status"
        )
        self.http_seconds = self._histogram(
            "heron_http_request_duration_seconds",
            "HTTP request latency, to the end of the response body.",
            "route",
            "method",
        )
        self.rpc = self._counter("heron_rpc_calls", "JSON-RPC calls.", "method", "outcome")
        self.rpc_seconds = self._histogram(
            "heron_rpc_call_duration_seconds", "JSON-RPC call latency.", "method"
        )
        self._model_families()
        self.tools = self._counter(
            "heron_tool_calls", "Tool calls by the agent.", "tool", "outcome"
        )
        self.stages = self._histogram(
            "heron_answer_stage_duration_seconds", "Seconds per stage of a chat answer.", "stage"
        )
        self.search_seconds = self._histogram(
            "heron_search_duration_seconds", "Library searches (search.query), by mode.", "mode"
        )
        self.key_requests = self._counter(
            "heron_key_requests", "Requests per API key, by outcome.", "key", "outcome"
        )
        self.spend = self._counter(
            "heron_spend_dollars",
            "Dollars model calls cost, per API key (empty: none), context and model alias.",
            "key",
            "context",
            "model",
        )
        self.key_tokens = self._counter(
            "heron_key_tokens", "Model tokens per API key, in and out.", "key", "direction"
        )

    def _model_families(self) -> None:
        """The model calls' families: answers, tokens, retries, fallbacks, cooldowns and
        the response cache, by alias."""
        self.answer_seconds = self._histogram(
            "heron_model_answer_duration_seconds", "Chat answers, whole, by alias.", "model"
        )
        self.tokens = self._counter(
            "heron_model_tokens",
            "Model tokens, prompt (in) and answer (out).",
            "model",
            "direction",
        )
        self.retries = self._counter(
            "heron_model_retries", "Model calls retried (429, 5xx, timeout).", "model"
        )
        self.fallbacks = self._counter(
            "heron_model_fallbacks", "Models given up on for the next of their chain.", "model"
        )
        self.cooldowns = self._counter(
            "heron_model_cooldowns", "Models cooled down after repeated failures.", "model"
        )
        self.probes = self._counter(
            "heron_model_probes", "Models tried once after their cooldown.", "model"
        )
        self.cache_hits = self._counter(
            "heron_model_cache_hits", "Calls answered from the response cache.", "model"
        )
        self.cache_misses = self._counter(
            "heron_model_cache_misses", "Calls the response cache had no answer for.", "model"
        )
        self.cache_saved = self._counter(
            "heron_cache_saved_dollars", "What the cache's answers would have cost.", "model"
        )

    def _counter(self, name: str, doc: str, *labels: str) -> Counter:
        return Counter(name, doc, labels, registry=self.registry)

    def _histogram(self, name: str, doc: str, *labels: str) -> Histogram:
        return Histogram(name, doc, labels, buckets=BUCKETS, registry=self.registry)

    def watch(self, gauges: Callable[[], Gauges]) -> None:
        """Report ``gauges()`` at each scrape."""
        self.registry.register(_ScrapeCollector(gauges))

    def observe_http(self, route: str, method: str, status: int, seconds: float) -> None:
        self.http.labels(route, method, str(status)).inc()
        self.http_seconds.labels(route, method).observe(seconds)

    def observe(self, kind: str, name: str, seconds: float, *, ok: bool) -> None:
        """One JSON-RPC call (``kind="rpc"``, the ``Registry`` observer's report)."""
        if kind != "rpc":
            raise ValueError(f"unknown call kind {kind!r}; use observe_http for HTTP")
        self.rpc.labels(name, "ok" if ok else "error").inc()
        self.rpc_seconds.labels(name).observe(seconds)

    def observe_answer(self, answer: Answer, seconds: float) -> None:
        """A chat answer: its latency, tokens, tool calls and the agent's stage timings."""
        model = self.model_label(answer.model)
        self.answer_seconds.labels(model).observe(seconds)
        self.tokens.labels(model, "in").inc(answer.usage.prompt_tokens)
        self.tokens.labels(model, "out").inc(answer.usage.completion_tokens)
        tools = self.known_tools()
        for use in answer.tools:
            outcome = "ok" if use.ok else ("refused" if use.refused else "error")
            self.tools.labels(use.name if use.name in tools else UNKNOWN, outcome).inc()
        for stage, spent in answer.timings.items():
            self.stages.labels(stage).observe(spent)

    def observe_broker(self, event: str, model: str) -> None:
        """The broker's report (``Broker.observer``): ``retry``, ``fallback``, ``cooldown``,
        ``probe``, ``cache_hit`` or ``cache_miss`` of ``model`` (an alias of the table:
        the labels stay few)."""
        counters = {
            "retry": self.retries,
            "fallback": self.fallbacks,
            "cooldown": self.cooldowns,
            "probe": self.probes,
            "cache_hit": self.cache_hits,
            "cache_miss": self.cache_misses,
        }
        counters[event].labels(self.model_label(model)).inc()

    def observe_saved(self, model: str, dollars: float) -> None:
        """The broker's report of a cache hit's cost not spent (``Broker.on_saved``)."""
        self.cache_saved.labels(self.model_label(model)).inc(dollars)

    def observe_spend(self, key: str | None, context: str, model: str, dollars: float) -> None:
        """The broker's report of a call's cost (``Broker.on_spend``)."""
        self.spend.labels(key or "", context, self.model_label(model)).inc(dollars)

    def model_label(self, model: str | None) -> str:
        return model if model and model in self.known_models() else UNKNOWN

    def observe_search(self, mode: str, seconds: float) -> None:
        self.search_seconds.labels(mode).observe(seconds)

    def render(self, keep: Keep | None = None) -> bytes:
        """The exposition; with ``keep`` (``view``), only the samples it keeps."""
        return generate_latest(self.registry if keep is None else _Kept(self.registry, keep))


def watchdog_gauges(path: Path) -> Gauges:
    """``heron_watchdog_check_status`` from the watchdog's latest report, if one is there:
    ``{"checks": [{"name": str, "ok": bool, ...}], ...}``. A file being rewritten or
    unreadable is left out of this scrape rather than failing it."""
    try:
        report: Any = json.loads(path.read_text())
        checks = report["checks"]
        samples = [({"check": str(c["name"])}, 1.0 if c["ok"] else 0.0) for c in checks]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {"heron_watchdog_check_status": samples}
