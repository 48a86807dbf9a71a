"""Which models are cooling down: one record per model for the whole process, shared by
every broker in it (a reload's new broker, a job's summary broker), so a model that keeps
failing is skipped by every request, not found out again by each.

The rules are LiteLLM's router's, per model (alias, provider, model and endpoint):

- a timeout or a connection failure (the costliest failure: a whole ``llm_timeout``), and
  a 429 whose ``Retry-After`` is longer than the broker waits itself (``llm_max_wait``),
  cool the model at once;
- a 5xx or a short 429 counts; more than ``allowed_fails`` of them within a minute cool it;
- a cooled model is skipped for ``cooldown`` seconds (a 429's own ``Retry-After`` when it
  gave one); then one request probes it with a single attempt while the others still
  skip it. An answer ends the cooldown and clears the count; a failed probe cools it
  again at once.

A circuit-breaker library (pybreaker, circuitbreaker) was weighed: each counts consecutive
failures with one fixed reset time per breaker, and neither takes a per-failure duration
(``Retry-After``) or a failure window, so the few rules above are kept here instead.

>>> COOLDOWNS.admit(spec)      # "ok", "probe" (the one attempt after a cooldown), "cooling"
... # doctest: +SKIP
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from heron.llm.config import ModelSpec

#: Seconds over which failures are counted against ``allowed_fails`` (LiteLLM's minute).
WINDOW = 60.0

Gate = Literal["ok", "probe", "cooling"]


@dataclass
class Health:
    """One model's record. ``until``: monotonic time its cooldown ends (0: not cooled)."""

    alias: str
    failures: deque[float] = field(default_factory=deque)
    until: float = 0.0
    reason: str = ""
    rate_limited: bool = False
    probing: bool = False
    cooldowns: int = 0


def _key(spec: ModelSpec) -> tuple[str, str, str, str]:
    return (spec.alias, spec.provider, spec.model, spec.base_url or "")


class Cooldowns:
    """Thread-safe: requests in every worker thread report here."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._health: dict[tuple[str, str, str, str], Health] = {}

    def admit(self, spec: ModelSpec) -> Gate:
        """Whether a request may call ``spec`` now: ``ok``; ``probe`` (its cooldown is
        over and this request makes the one attempt that tells; it must report back with
        ``succeeded``, ``failed`` or ``release``); ``cooling`` (skip it)."""
        with self._lock:
            health = self._health.get(_key(spec))
            if health is None or not health.until:
                return "ok"
            if self._clock() < health.until or health.probing:
                return "cooling"
            health.probing = True
            return "probe"

    def remaining(self, spec: ModelSpec) -> tuple[float, bool]:
        """``(seconds until spec is tried again, cooled by a 429)``."""
        with self._lock:
            health = self._health.get(_key(spec))
            if health is None or not health.until:
                return 0.0, False
            return max(0.0, health.until - self._clock()), health.rate_limited

    def succeeded(self, spec: ModelSpec) -> bool:
        """``spec`` answered: its cooldown and count are cleared. True if it was cooled."""
        with self._lock:
            health = self._health.get(_key(spec))
            if health is None:
                return False
            was = bool(health.until)
            health.failures.clear()
            health.until, health.reason, health.probing = 0.0, "", False
            return was

    def release(self, spec: ModelSpec) -> None:
        """A probe that told nothing (the caller went away, a refusal of the request
        itself): the next request probes again."""
        with self._lock:
            health = self._health.get(_key(spec))
            if health is not None:
                health.probing = False

    def failed(
        self,
        spec: ModelSpec,
        reason: str,
        *,
        allowed_fails: int,
        cooldown: float,
        at_once: bool = False,
        seconds: float | None = None,
        rate_limited: bool = False,
    ) -> bool:
        """Count a failure of ``spec``; True if this one cools it down (``at_once``, a
        failed probe, or more than ``allowed_fails`` within ``WINDOW``) for ``seconds``
        (default ``cooldown``). ``cooldown`` 0 turns cooling off."""
        now = self._clock()
        with self._lock:
            health = self._health.setdefault(_key(spec), Health(spec.alias))
            probed, health.probing = health.probing, False
            health.failures.append(now)
            while health.failures and health.failures[0] < now - WINDOW:
                health.failures.popleft()
            cool = at_once or probed or len(health.failures) > allowed_fails
            if not cool or cooldown <= 0:
                return False
            health.until = now + (seconds if seconds is not None else cooldown)
            health.reason, health.rate_limited = reason, rate_limited
            health.cooldowns += 1
            return True

    def snapshot(self) -> list[dict[str, Any]]:
        """Every model reported on: ``alias``, ``cooling``, ``seconds_left``, ``until``
        (Unix time), ``reason``, ``failures`` (in the last minute), ``cooldowns`` (so far)."""
        now, wall = self._clock(), time.time()
        with self._lock:
            rows = []
            for health in self._health.values():
                left = max(0.0, health.until - now) if health.until else 0.0
                rows.append(
                    {
                        "alias": health.alias,
                        "cooling": bool(health.until) and (left > 0 or health.probing),
                        "seconds_left": round(left, 3),
                        "until": round(wall + left, 3) if left else None,
                        "reason": health.reason,
                        "rate_limited": health.rate_limited,
                        "failures": sum(1 for t in health.failures if t >= now - WINDOW),
                        "cooldowns": health.cooldowns,
                    }
                )
            return rows

    def reset(self) -> None:
        """Forget every record (a test's fresh start)."""
        with self._lock:
            self._health.clear()


#: The process's one record.
COOLDOWNS = Cooldowns()
