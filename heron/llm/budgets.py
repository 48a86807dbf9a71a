"""Which models a caller may call, and budgets in money: one rule below every door.

Every model call goes through the broker, so the broker enforces both, whatever door the
call came by (``/v1``, ``agent.chat``, ``/chat/stream``, MCP's ``ask``, a job):

- **Allowed models.** A key (``heron keys create --models``) and a context (``models`` in
  its heron.toml table) may name the models they may call: aliases of models.yml and
  ``provider/model`` names, with ``*`` and ``?`` wildcards (``gpt-*``, ``openai/*``). A
  request for another model is refused (``ModelNotAllowed``, 403; JSON-RPC -32010); a
  fallback outside the list is skipped, so a chain never reaches a model the caller may
  not call.
- **Budgets in money.** A key, a context and a model alias may have ``max_budget``
  (dollars) per ``budget_duration`` (LiteLLM's names and forms: ``30s``, ``15m``, ``1h``,
  ``30d``, ``1mo``; none: for ever). Windows are aligned on the clock (UTC): ``1d`` runs
  from midnight to midnight, ``1mo`` is the calendar month, ``30d`` the 30-day periods
  since 1970. Before a call is sent, the most it can cost (its prompt's estimate and its
  answer's bound, at the model's price, ``heron.llm.prices``) is held on each budget
  that pays for it, under one lock, against what is spent and what every call under way
  holds; a call that cannot be held is refused (``OverBudget``: 429, type
  ``budget_exceeded``, naming the budget and when it resets) and nothing is sent, so
  concurrent calls never take a budget past its limit. When the call ends its real cost
  (the provider's usage) is charged and the rest given back. A model alias over its own
  budget is skipped like a cooling one; the fallbacks answer.

What was spent is written at once to the key store's ``spend`` table (per payer, model
and hour: ``key:NAME``, ``context:NAME``, ``model:ALIAS``), which ``heron keys usage``
reads, and a budget's window is read from it when a process first needs it, so a restart
does not reset a budget. Servers on one PostgreSQL share the table; each holds its own
calls' reservations in memory.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from fnmatch import fnmatchcase

from heron.core.chat import ChatRequest
from heron.keys import DURATION, Forbidden, Key, KeyStore, OverLimit, open_keys
from heron.llm.config import ModelSpec
from heron.llm.payload import ANSWER_RESERVE, estimate_tokens
from heron.settings import Settings

_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class ModelNotAllowed(Forbidden):
    """The caller (a key, a context) may not call the model asked for (403; -32010)."""

    def __init__(self, who: str, alias: str, patterns: Iterable[str]) -> None:
        super().__init__(
            who,
            "model",
            message=f"forbidden: {who} may not call the model {alias!r}; it may call: "
            f"{', '.join(patterns)}. Ask for one of those, or have the list widened (heron "
            "keys create --models, or models in the context's heron.toml table).",
        )


class OverBudget(OverLimit):
    """A budget in money without room for a call (429, OpenAI type ``budget_exceeded``)."""

    openai_type = "budget_exceeded"
    #: The payer whose budget it is (``key:ci``, ``context:ops``, ``model:fast``).
    limit_of = ""


@dataclass(frozen=True)
class Budget:
    """``max_budget`` dollars per ``duration`` for ``payer`` (``key:ci``, ``context:ops``,
    ``model:fast``)."""

    payer: str
    max_budget: float
    duration: str | None = None

    def window(self, now: float) -> tuple[float, float]:
        """The current window's start and end (``inf``: a budget for ever)."""
        if self.duration is None:
            return 0.0, math.inf
        match = DURATION.match(self.duration)
        assert match is not None  # checked where the budget was read
        count, unit = int(match.group(1)), match.group(2)
        if unit == "mo":
            at = datetime.fromtimestamp(now, UTC)
            months = at.year * 12 + at.month - 1
            first = months - months % count
            start = datetime(first // 12, first % 12 + 1, 1, tzinfo=UTC)
            last = first + count
            end = datetime(last // 12, last % 12 + 1, 1, tzinfo=UTC)
            return start.timestamp(), end.timestamp()
        length = count * _SECONDS[unit]
        start = now - now % length
        return start, start + length

    def describe(self) -> str:
        per = f" per {self.duration}" if self.duration else ""
        return f"${self.max_budget:g}{per}"


def patterns_allow(spec: ModelSpec, patterns: Iterable[str]) -> bool:
    """Whether one of ``patterns`` names ``spec``: its alias, or ``provider/model``."""
    names = (spec.alias, f"{spec.provider}/{spec.model}", spec.model)
    return any(fnmatchcase(name, p) for p in patterns for name in names)


@dataclass(frozen=True)
class Payer:
    """Who pays for a call: its key (``None``: none) and context, with what they may call
    (``None``: anything) and their budgets."""

    key: str | None
    context: str
    rules: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (who, patterns) each must allow
    budgets: tuple[Budget, ...] = ()
    #: Whether its calls may use the response cache (a key made with ``--no-cache``: not).
    cache: bool = True


def payer_of(settings: Settings, key: Key | None) -> Payer:
    """The payer of a call made with ``settings`` (its context's table) and ``key`` (the
    tab's: ``heron.llm.metering.Tab.key``; ``None``: none)."""
    rules: list[tuple[str, tuple[str, ...]]] = []
    budgets = []
    spec = settings.context_spec
    if spec is not None and spec.models is not None:
        rules.append((f"the context {settings.context!r}", spec.models))
    if spec is not None and spec.max_budget is not None:
        budgets.append(Budget(f"context:{settings.context}", spec.max_budget, spec.budget_duration))
    if key is not None and key.models is not None:
        rules.append((f"the key {key.name!r}", key.models))
    if key is not None and key.max_budget is not None:
        budgets.append(Budget(f"key:{key.name}", key.max_budget, key.budget_duration))
    name = None if key is None else key.name
    cache = key is None or not key.no_cache
    return Payer(name, settings.context, tuple(rules), tuple(budgets), cache)


def allowed_chain(payer: Payer, chain: list[ModelSpec]) -> list[ModelSpec]:
    """``chain`` as ``payer`` may call it: ``ModelNotAllowed`` for its first model, its
    fallbacks outside a list left out."""
    for who, patterns in payer.rules:
        if not patterns_allow(chain[0], patterns):
            raise ModelNotAllowed(who, chain[0].alias, patterns)
    return [s for s in chain if all(patterns_allow(s, p) for _, p in payer.rules)]


def _hour(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H")


@dataclass
class _Window:
    start: float
    spent: float = 0.0


@dataclass(frozen=True)
class Hold:
    """What one call holds on its budgets, to settle when it ends."""

    payer: Payer
    budgets: tuple[Budget, ...]
    dollars: float


class Ledger:
    """What each payer spent and holds, in dollars; one per key store (``ledger_for``).
    Thread-safe; the store is opened on the first call that costs something."""

    def __init__(self, open_store: Callable[[], KeyStore]) -> None:
        self._open_store = open_store
        self._store: KeyStore | None = None
        self._lock = threading.Lock()
        self._windows: dict[str, _Window] = {}
        self._held: dict[str, float] = {}

    @property
    def store(self) -> KeyStore:
        if self._store is None:
            self._store = self._open_store()
        return self._store

    def _window(self, budget: Budget, now: float) -> _Window:
        """``budget``'s window now (the lock held): read from the store when it starts."""
        start, _ = budget.window(now)
        window = self._windows.get(budget.payer)
        if window is None or window.start != start:
            spent = self.store.spent_since(budget.payer, _hour(start) if start else "")
            window = self._windows[budget.payer] = _Window(start, spent)
        return window

    def left(self, budget: Budget, now: float | None = None) -> float:
        """Dollars ``budget`` has left, what calls under way hold counted as spent."""
        with self._lock:
            now = time.time() if now is None else now
            window = self._window(budget, now)
            return budget.max_budget - window.spent - self._held.get(budget.payer, 0.0)

    def hold(self, payer: Payer, budgets: tuple[Budget, ...], dollars: float) -> Hold:
        """Hold ``dollars`` on every one of ``budgets`` at once, or raise ``OverBudget``
        naming the first without room (holding nothing)."""
        if not budgets:
            return Hold(payer, (), dollars)
        with self._lock:
            now = time.time()
            for budget in budgets:
                window = self._window(budget, now)
                room = budget.max_budget - window.spent - self._held.get(budget.payer, 0.0)
                if dollars > room or room <= 0:
                    held = self._held.get(budget.payer, 0.0)
                    raise _over(budget, window.spent, held, dollars, now)
            for budget in budgets:
                self._held[budget.payer] = self._held.get(budget.payer, 0.0) + dollars
        return Hold(payer, budgets, dollars)

    def settle(self, hold: Hold, alias: str, dollars: float) -> None:
        """Give back what ``hold`` held and charge ``dollars`` to every payer of it (the
        key, the context and the model, budgets or not: ``heron keys usage`` shows them)."""
        now = time.time()
        with self._lock:
            for budget in hold.budgets:
                self._held[budget.payer] = max(0.0, self._held[budget.payer] - hold.dollars)
                window = self._windows.get(budget.payer)
                if window is not None and window.start == budget.window(now)[0]:
                    window.spent += dollars
        if dollars <= 0:
            return
        payers = [f"context:{hold.payer.context}", f"model:{alias}"]
        if hold.payer.key is not None:
            payers.insert(0, f"key:{hold.payer.key}")
        held = {b.payer for b in hold.budgets}
        with self._lock:  # a budgetless payer's window, if read, counts it too
            for name in payers:
                window = self._windows.get(name)
                if name not in held and window is not None:
                    window.spent += dollars
        self.store.add_spend((name, _hour(now), alias, dollars) for name in payers)


def _over(budget: Budget, spent: float, held: float, dollars: float, now: float) -> OverBudget:
    _, end = budget.window(now)
    who = budget.payer.replace(":", " ", 1)
    if math.isinf(end):
        reset, wait = "it never resets (no budget_duration): raise max_budget", 86400
    else:
        wait = max(1, math.ceil(end - now))
        stamp = datetime.fromtimestamp(end, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        reset = f"it resets at {stamp} (in {wait} s)"
    message = (
        f"budget exceeded: the {who} has spent ${spent:.6f} of its budget of "
        f"{budget.describe()} and its calls under way hold ${held:.6f}; this call may "
        f"cost up to ${dollars:.6f}; {reset}."
    )
    refusal = OverBudget(budget.payer, budget.describe(), wait, message=message)
    refusal.limit_of = budget.payer
    return refusal


def hold_call(
    ledger: Ledger, payer: Payer, request: ChatRequest, spec: ModelSpec, bound: int | None
) -> tuple[ChatRequest, Hold]:
    """Hold what ``request`` may cost on ``spec``'s model against the payer's budgets and
    the model's own; returns the request to send (one with no bound on its answer is given
    what the tightest budget can pay for, as ``max_tokens``) and the hold to settle."""
    budgets = payer.budgets
    if spec.max_budget is not None:
        budgets = (*budgets, Budget(f"model:{spec.alias}", spec.max_budget, spec.budget_duration))
    price = spec.price
    prompt = estimate_tokens(request)
    if not budgets or (price.input_cost_per_token == 0 and price.output_cost_per_token == 0):
        return request, Hold(payer, (), 0.0)
    if bound is None and price.output_cost_per_token > 0:
        room = min(ledger.left(b) for b in budgets) - price.cost(prompt, 0)
        affordable = int(room / price.output_cost_per_token)
        most = max(1, spec.capabilities.context_window - prompt)
        bound = max(min(most, affordable), ANSWER_RESERVE)
        if bound < most:
            request = replace(request, sampling=replace(request.sampling, max_tokens=bound))
    return request, ledger.hold(payer, budgets, price.cost(prompt, bound or 0))


_ledgers: dict[str, Ledger] = {}
_ledgers_lock = threading.Lock()


def ledger_for(settings: Settings) -> Ledger:
    """The process's ledger of the settings' key store (their database, else their home)."""
    where = settings.postgres_url or str(settings.home)
    with _ledgers_lock:
        if where not in _ledgers:
            _ledgers[where] = Ledger(lambda: open_keys(settings))
        return _ledgers[where]
