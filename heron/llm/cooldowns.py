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
  skip it. The probe's first token is its answer: it ends the cooldown and clears the
  count, however slowly the rest of the answer is read. A failed probe cools it again at
  once, and so does one that has not answered by its deadline (the broker's timeout):
  a probe the model holds, or nothing interrupts, cannot keep every other request out.

Only failures that say something of the model count. A timeout the request caused itself
(``heron.llm.errors.OwnTimeout``: a whole answer of more ``max_tokens`` than Heron's own
calls ask for) is the broker's to keep from here, as is a request refused for itself (a
4xx): one client's request never cools a model for the others.

Replicas of one PostgreSQL share what cools (``heron.llm.board``, which a broker hands
its process's record, ``use``): a model cooled on one is skipped by all until its
cooldown ends, and then one probe is claimed among them; each keeps counting its own
failures.

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

from heron.llm.board import Board, Cooled
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
    #: When the probe under way counts as failed if it has not answered (0: no deadline).
    probe_until: float = 0.0
    #: The length of the last cooldown, which an unanswered probe starts again.
    length: float = 0.0
    cooldowns: int = 0

    def lapse(self, now: float) -> None:
        """A probe past its deadline is a failed one: the model cools again from then."""
        if self.probing and self.probe_until and now >= self.probe_until:
            self.until = self.probe_until + self.length
            self.reason = "its probe did not answer in time"
            self.probing, self.probe_until = False, 0.0
            self.cooldowns += 1


def _key(spec: ModelSpec) -> tuple[str, str, str, str]:
    return (spec.alias, spec.provider, spec.model, spec.base_url or "")


def _name(spec: ModelSpec) -> str:
    """``_key`` as one string, the board's key."""
    return "\x1f".join(_key(spec))


class Cooldowns:
    """Thread-safe: requests in every worker thread report here."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._health: dict[tuple[str, str, str, str], Health] = {}
        self._board: Board | None = None

    def use(self, board: Board | None) -> None:
        """Share what cools with the other replicas on ``board`` (``None``: this
        process alone)."""
        self._board = board

    def admit(self, spec: ModelSpec, *, deadline: float | None = None) -> Gate:
        """Whether a request may call ``spec`` now: ``ok``; ``probe`` (its cooldown is
        over and this request makes the one attempt that tells, among every replica with
        a board; it must report back with ``succeeded``, ``failed`` or ``release``, and
        counts as failed if it has not by ``deadline`` seconds from now); ``cooling``
        (skip it)."""
        now = self._clock()
        with self._lock:
            health = self._health.get(_key(spec))
            if health is not None and health.until:
                health.lapse(now)
                if now < health.until or health.probing:
                    return "cooling"
        board = self._board
        if board is not None:
            return self._shared(board, spec, deadline, now)
        with self._lock:
            if health is None or not health.until:
                return "ok"
            health.probing = True
            health.probe_until = now + deadline if deadline else 0.0
            return "probe"

    def _shared(self, board: Board, spec: ModelSpec, deadline: float | None, now: float) -> Gate:
        """``admit`` past this process's own record: the board says whether another
        replica cooled the model, and which replica probes it once its cooldown ends."""
        name = _name(spec)
        cooled = board.seen(name)
        with self._lock:
            health = self._health.get(_key(spec))
            if cooled is None and (health is None or not health.until):
                return "ok"
        if cooled is None or time.time() >= cooled.until:
            cooled = board.claim(name, deadline)
        with self._lock:
            health = self._health.setdefault(_key(spec), Health(spec.alias))
            if cooled is None:  # this request probes (or no replica has it cooled now)
                health.until = health.until or now
                health.probing = True
                health.probe_until = now + deadline if deadline else 0.0
                return "probe"
            _learn(health, cooled, now)
            return "cooling"

    def remaining(self, spec: ModelSpec) -> tuple[float, bool]:
        """``(seconds until spec is tried again, cooled by a 429)``: while a probe is
        under way, until its deadline."""
        now = self._clock()
        with self._lock:
            health = self._health.get(_key(spec))
            if health is None or not health.until:
                return 0.0, False
            health.lapse(now)
            until = health.probe_until if health.probing and health.probe_until else health.until
            return max(0.0, until - now), health.rate_limited

    def succeeded(self, spec: ModelSpec) -> bool:
        """``spec`` answered: its cooldown and count are cleared (every replica's, with
        a board). True if it was cooled."""
        with self._lock:
            health = self._health.get(_key(spec))
            if health is None:
                return False
            was = bool(health.until)
            health.failures.clear()
            health.until, health.reason, health.probing = 0.0, "", False
            health.probe_until = 0.0
        if was and self._board is not None:
            self._board.clear(_name(spec))
        return was

    def release(self, spec: ModelSpec) -> None:
        """A probe that told nothing (the caller went away, a refusal of the request
        itself): the next request probes again."""
        with self._lock:
            health = self._health.get(_key(spec))
            probing = health is not None and health.probing
            if health is not None:
                health.probing, health.probe_until = False, 0.0
        if probing and self._board is not None:
            self._board.release(_name(spec))

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
            probed, health.probing, health.probe_until = health.probing, False, 0.0
            health.failures.append(now)
            while health.failures and health.failures[0] < now - WINDOW:
                health.failures.popleft()
            cool = at_once or probed or len(health.failures) > allowed_fails
            if not cool or cooldown <= 0:
                return False
            health.length = seconds if seconds is not None else cooldown
            health.until = now + health.length
            health.reason, health.rate_limited = reason, rate_limited
            health.cooldowns += 1
            length = health.length
        if self._board is not None:
            self._board.cool(_name(spec), spec.alias, length, reason, rate_limited)
        return True

    def snapshot(self) -> list[dict[str, Any]]:
        """Every model reported on: ``alias``, ``cooling``, ``seconds_left``, ``until``
        (Unix time), ``reason``, ``failures`` (in the last minute), ``cooldowns`` (so far)."""
        now, wall = self._clock(), time.time()
        with self._lock:
            rows = []
            for health in self._health.values():
                health.lapse(now)
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


def _learn(health: Health, cooled: Cooled, now: float) -> None:
    """Take another replica's cooldown (``cooled``, in Unix time) into ``health`` (in
    this record's clock), so this process skips the model without asking again."""
    left = cooled.until - time.time()
    if cooled.probe_until is not None:  # another's probe: skip it until its deadline
        left = max(left, cooled.probe_until - time.time())
    if health.until < now + left:
        health.cooldowns += 1
    health.until = now + max(left, 0.0)
    health.length, health.reason = cooled.length, cooled.reason
    health.rate_limited = cooled.rate_limited
    health.probing, health.probe_until = False, 0.0


#: The process's one record.
COOLDOWNS = Cooldowns()
