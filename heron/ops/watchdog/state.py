"""What the watchdog remembers between runs, per check, and the rules that read it.

``--once`` from a timer is a new process each time, so the counts that make thresholds
and budgets work live in ``$HERON_HOME/watchdog-state.json``, written whole and atomically
after every run. The rules (``observe``), with thresholds as in Gatus:

- a failure counts towards ``failure_threshold``; the run that reaches it opens an
  incident (alert ``firing``); below it nothing happens (no flapping);
- while the incident is open each failed run applies the remedy, at most
  ``restart_budget`` times in ``budget_window``; the failure that finds the budget spent
  escalates (a critical alert) and no remedy runs again until the check recovers;
- ``success_threshold`` passes in a row close the incident (alert ``resolved``, once);
- while open, the alert is repeated every ``repeat_interval`` (as Alertmanager does);
- a muted check (a silence, a maintenance window, a failing dependency) counts as ever
  but runs no remedy and sends nothing (``events``); when the mute ends, an incident
  still open sends ``firing`` once, and one that closed meanwhile ``resolved`` only if
  its ``firing`` had been sent.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from heron.errors import ConfigError
from heron.private import private_dir


def iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")


@dataclass
class CheckState:
    failures: int = 0  # failed runs in a row
    successes: int = 0  # passed runs in a row
    firing: bool = False  # an incident is open
    since: float | None = None  # when the current failing streak began
    last_alert: float | None = None
    remedies: list[float] = field(default_factory=list)  # when each ran, within the window
    escalated: bool = False
    last_ok: bool | None = None
    last_detail: str = ""
    memory: dict[str, Any] = field(default_factory=dict)  # the check's own (deploy)
    notified: bool = False  # this incident's firing was sent
    owed_resolved: bool = False  # it closed while muted, after its firing was sent
    last_run: float | None = None
    last_seconds: float = 0.0
    last_data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """What this run's result asks for; ``observe`` has already updated the state."""

    fire: bool = False
    resolve: bool = False
    remedy: bool = False
    escalate: bool = False


def observe(state: CheckState, ok: bool, spec: Any, now: float, muted: bool = False) -> Decision:
    """Count ``ok`` into ``state`` and say what to do, by the rules in the module doc."""
    state.last_ok = ok
    if ok:
        state.successes += 1
        state.failures = 0
        if state.firing and state.successes >= spec.success_threshold:
            state.firing, state.escalated, state.since = False, False, None
            return Decision(resolve=True)
        if not state.firing:
            state.since = None  # a streak below the threshold is forgotten
        return Decision()
    state.failures += 1
    state.successes = 0
    state.since = state.since or now
    fire = not state.firing and state.failures >= spec.failure_threshold
    state.firing = state.firing or fire
    if not state.firing:
        return Decision()
    if spec.remedy is None or state.escalated or muted:
        return Decision(fire=fire)
    state.remedies = [t for t in state.remedies if now - t < spec.budget_window]
    if len(state.remedies) < spec.restart_budget:
        state.remedies.append(now)
        return Decision(fire=fire, remedy=True)
    state.escalated = True
    return Decision(fire=fire, escalate=True)


def events(
    state: CheckState, decision: Decision, muted: bool, now: float, repeat_interval: float
) -> list[str]:
    """The notices this run sends (``firing``, ``escalated``, ``repeat``, ``resolved``)."""
    if muted:
        if decision.resolve:
            state.owed_resolved = state.owed_resolved or state.notified
            state.notified = False
        return []
    if state.firing:
        state.owed_resolved = False
        sent = [] if state.notified else ["firing"]
        state.notified = True
        if decision.escalate:
            sent.append("escalated")
        due = state.last_alert is not None and now - state.last_alert >= repeat_interval
        if not sent and due:
            sent.append("repeat")
        return sent
    if (decision.resolve and state.notified) or state.owed_resolved:
        state.notified = state.owed_resolved = False
        return ["resolved"]
    state.notified = False
    return []


class StateFile:
    """``watchdog-state.json``: ``{check name: CheckState}``; checks no longer configured
    are dropped when it is saved."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, CheckState]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"The watchdog state {self.path} is unreadable ({exc}); delete it to start "
                "the counts afresh (open incidents will be alerted again)."
            ) from exc
        known = set(CheckState.__dataclass_fields__)
        return {
            name: CheckState(**{k: v for k, v in entry.items() if k in known})
            for name, entry in data.get("checks", {}).items()
        }

    def save(self, states: dict[str, CheckState]) -> None:
        private_dir(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        body = {"checks": {name: asdict(state) for name, state in states.items()}}
        tmp.write_text(json.dumps(body, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)  # a reader sees the old file or the new, never half
