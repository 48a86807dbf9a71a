"""Deployments of one model as a pool: which one a call tries first, and each one's
requests and tokens a minute.

A pool is an alias whose ``deployments`` are other aliases (several ``model_list``
entries of one ``model_name`` in a LiteLLM file; ``deployments: [a, b]`` in models.yml).
A call to it tries its deployments in the order its ``routing_strategy`` gives (the
alias's, else ``router_settings.routing_strategy``, else ``simple-shuffle``), the rest
of them after the first as its fallbacks, then the pool's own fallbacks. The strategies
are LiteLLM's router's:

- ``simple-shuffle``: a random order, each deployment drawn in proportion to its
  ``weight``, else its ``rpm``, else its ``tpm``, else evenly;
- ``least-busy``: fewest calls under way first (ties shuffled);
- ``latency-based-routing``: lowest median latency of its last ``LATENCY_SAMPLES``
  answers first (time to the first token for a stream; LiteLLM takes the mean, but one
  answer slowed by a busy moment would then keep a fast deployment last for ten); one
  not measured yet counts as 0, so it is tried and measured, and one call in ``EXPLORE``
  goes to another deployment first, so that one measured slow is measured again;
- ``usage-based-routing`` (and ``-v2``): fewest tokens this minute first.

A deployment with ``rpm`` or ``tpm`` that has reached it this minute is skipped, as a
cooling one is; each deployment cools down on its own failures (``heron.llm.cooldowns``).
The state is the process's (``DEPLOYMENTS``), shared by every broker in it.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from heron.llm.config import ModelSpec

#: Answers a deployment's latency is the mean of.
LATENCY_SAMPLES = 10
#: One call in this many tries a random deployment first under latency-based routing.
EXPLORE = 10
#: The window of ``rpm`` and ``tpm``, in seconds.
MINUTE = 60.0


@dataclass
class _Minute:
    start: float
    requests: int = 0
    tokens: int = 0


def _key(spec: ModelSpec) -> tuple[str, str, str, str]:
    return (spec.alias, spec.provider, spec.model, spec.base_url or "")


class Deployments:
    """What the strategies read: calls under way, latencies and the minute's use of each
    deployment. Thread-safe."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None
    ) -> None:
        self._clock = clock
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._busy: Counter[tuple[str, str, str, str]] = Counter()
        self._latency: dict[tuple[str, str, str, str], deque[float]] = {}
        self._minutes: dict[tuple[str, str, str, str], _Minute] = {}

    def order(self, strategy: str, members: list[ModelSpec]) -> list[ModelSpec]:
        """``members`` in the order ``strategy`` tries them."""
        with self._lock:
            if strategy == "least-busy":
                return self._sorted(members, lambda s: self._busy[_key(s)])
            if strategy == "latency-based-routing":
                ordered = self._sorted(members, self._latency_of)
                if len(ordered) > 1 and self._rng.randrange(EXPLORE) == 0:
                    other = ordered.pop(self._rng.randrange(1, len(ordered)))
                    ordered.insert(0, other)
                return ordered
            if strategy.startswith("usage-based-routing"):
                return self._sorted(members, lambda s: self._minute(s).tokens)
            return self._weighted(members)

    def _sorted(
        self, members: list[ModelSpec], by: Callable[[ModelSpec], float]
    ) -> list[ModelSpec]:
        shuffled = self._rng.sample(members, len(members))  # ties in a random order
        return sorted(shuffled, key=by)

    def _weighted(self, members: list[ModelSpec]) -> list[ModelSpec]:
        """A weighted draw without replacement (Efraimidis-Spirakis keys: u^(1/w))."""

        def weight(spec: ModelSpec) -> float:
            return float(spec.weight or spec.rpm or spec.tpm or 1)

        keys = {s.alias: self._rng.random() ** (1.0 / weight(s)) for s in members}
        return sorted(members, key=lambda s: keys[s.alias], reverse=True)

    def _latency_of(self, spec: ModelSpec) -> float:
        samples = self._latency.get(_key(spec))
        return statistics.median(samples) if samples else 0.0

    def _minute(self, spec: ModelSpec) -> _Minute:
        now = self._clock()
        minute = self._minutes.get(_key(spec))
        if minute is None or now - minute.start >= MINUTE:
            minute = self._minutes[_key(spec)] = _Minute(now)
        return minute

    def over_rate(self, spec: ModelSpec) -> float | None:
        """Seconds until ``spec`` may be called again if it has used its ``rpm`` or
        ``tpm`` this minute, else ``None``."""
        if spec.rpm is None and spec.tpm is None:
            return None
        with self._lock:
            minute = self._minute(spec)
            full = (spec.rpm is not None and minute.requests >= spec.rpm) or (
                spec.tpm is not None and minute.tokens >= spec.tpm
            )
            return max(0.0, minute.start + MINUTE - self._clock()) if full else None

    def started(self, spec: ModelSpec) -> None:
        """A call to ``spec`` is sent: it is busy, and counts against its ``rpm``."""
        with self._lock:
            self._busy[_key(spec)] += 1
            self._minute(spec).requests += 1

    def ended(self, spec: ModelSpec, seconds: float | None, tokens: int) -> None:
        """The call ended: ``seconds`` to its answer (``None``: it gave none), ``tokens``
        it spent, against its ``tpm``."""
        with self._lock:
            key = _key(spec)
            self._busy[key] = max(0, self._busy[key] - 1)
            self._minute(spec).tokens += tokens
            if seconds is not None:
                self._latency.setdefault(key, deque(maxlen=LATENCY_SAMPLES)).append(seconds)

    def snapshot(self) -> list[dict[str, object]]:
        """Each deployment's calls under way, mean latency and minute's use."""
        with self._lock:
            keys = set(self._busy) | set(self._latency) | set(self._minutes)
            rows = []
            for key in sorted(keys):
                samples = self._latency.get(key)
                minute = self._minutes.get(key)
                rows.append(
                    {
                        "alias": key[0],
                        "busy": self._busy[key],
                        "latency": round(statistics.median(samples), 4) if samples else None,
                        "requests_this_minute": minute.requests if minute else 0,
                        "tokens_this_minute": minute.tokens if minute else 0,
                    }
                )
            return rows


#: The process's deployments, shared by every broker in it.
DEPLOYMENTS = Deployments()
