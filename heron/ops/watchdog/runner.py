"""One watchdog run: every check, then what its result asks for, then the record.

>>> watchdog = Watchdog(load_config(None, settings), settings)
>>> report = watchdog.run_once()        # doctest: +SKIP
>>> report["ok"], [c["status"] for c in report["checks"]]       # doctest: +SKIP
(False, ['ok', 'firing'])

Per check, in the order of the config: run it (``checks``), count the result
(``state.observe``), apply its remedy, send the alert and call the interventions hook
when the rules say so, and record each of those as an action. The state, the latest
report and a history line are written at the end. Runs take a lock, so a timer's run and
a person's never interleave their counts.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heron.errors import ConfigError
from heron.notify import Channels
from heron.ops.watchdog import alerts, interventions, remedies
from heron.ops.watchdog.checks import run
from heron.ops.watchdog.config import WatchdogConfig, load_config
from heron.ops.watchdog.outcome import Context, Outcome
from heron.ops.watchdog.report import append_history, history_path, latest_path, write_latest
from heron.ops.watchdog.silences import Silences
from heron.ops.watchdog.state import CheckState, StateFile, events, iso, observe
from heron.private import private_dir
from heron.redact import redact
from heron.settings import Settings

log = logging.getLogger("heron.watchdog")

#: How long a run waits for another run's lock before giving up.
LOCK_WAIT = 120.0


class Watchdog:
    def __init__(
        self,
        config: WatchdogConfig,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.settings = settings
        self.clock = clock
        urls = [*config.alerts, *(u.get_secret_value() for u in settings.ops.watchdog_alert_urls)]
        self.channels = Channels.parse(dict.fromkeys(urls))  # a bad URL stops it here
        self.state_file = StateFile(settings.home / "watchdog-state.json")

    def run_once(
        self, *, kinds: Collection[str] = (), default_interval: float | None = None
    ) -> dict[str, Any]:
        """Run every check that is due once (only those of ``kinds``, when given); the
        report (also written to ``watchdog-latest.json``). A check is due when its
        ``interval`` (a deploy's default: ``HERON_WATCHDOG_DEPLOY_INTERVAL``; else
        ``default_interval``, else each run) has passed since it last ran; one not run
        is reported as it last was."""
        started = self.clock()
        clock = time.monotonic()
        with _locked(self.settings.home / "watchdog.lock"):
            states = self.state_file.load()
            silences = Silences(self.settings.home)
            results = []
            for spec in self.config.ordered():
                state = states.setdefault(spec.name, CheckState())
                interval = self.interval(spec, default_interval)
                skip = (kinds and spec.kind not in kinds) or not _due(state, interval, started)
                if not skip:
                    results.append(self._check(spec, states, silences))
                elif state.last_run is not None:
                    results.append(_result(spec, state, [], ran=False))
            order = {spec.name: i for i, spec in enumerate(self.config.checks)}
            results.sort(key=lambda r: order[r["name"]])
            self.state_file.save({s.name: states[s.name] for s in self.config.checks})
            report = {
                "started": iso(started),
                "seconds": round(time.monotonic() - clock, 3),
                "ok": all(r["ok"] for r in results),
                "config": self.config.source,
                "checks": results,
                "actions": [a for r in results for a in r["actions"]],
            }
            write_latest(latest_path(self.settings.home), report)
            append_history(
                history_path(self.settings.home),
                _history_line(report),
                max_bytes=self.config.history_max_bytes,
                keep=self.config.history_keep,
            )
        return report

    def interval(self, spec: Any, default: float | None) -> float | None:
        if spec.interval is not None:
            return float(spec.interval)
        if spec.kind == "deploy":
            return self.settings.ops.watchdog_deploy_interval
        return default

    def run_named(self, names: list[str]) -> list[tuple[str, Outcome]]:
        """Run the checks ``names`` now, outside the counts (a deploy's strict checks)."""
        return [(name, self._outcome(self.config.check(name), {})) for name in names]

    def _outcome(self, spec: Any, memory: dict[str, Any]) -> Outcome:
        try:
            return run(spec, Context(self.settings, memory, self.run_named, self.clock))
        except Exception as exc:  # a bug in one check must not stop the others
            return Outcome(False, redact(f"the check itself failed: {type(exc).__name__}: {exc}"))

    def muted(
        self, spec: Any, states: dict[str, CheckState], silences: Silences, now: float
    ) -> str | None:
        """Why ``spec`` sends nothing and runs no remedy now, or None."""
        down = [n for n in spec.depends_on if states[n].last_ok is False or states[n].firing]
        if down:
            return f"inhibited: it depends on {', '.join(down)}, which is failing"
        if silence := silences.matching(spec.name, now):
            said = f": {silence.reason}" if silence.reason else ""
            return (
                f"silenced by {silence.by} until {iso(silence.ends)} (silence {silence.id}){said}"
            )
        for window in self.config.maintenance:
            if window.covers(spec.name) and window.active(now):
                return f"in a {window.describe()}"
        return None

    def _check(
        self, spec: Any, states: dict[str, CheckState], silences: Silences
    ) -> dict[str, Any]:
        name = spec.name
        state = states[name]
        state.last_run = self.clock()
        outcome = self._outcome(spec, state.memory)
        # Once here, so the report, the history, alerts and interventions all get it masked.
        outcome.detail = redact(outcome.detail)
        now = self.clock()
        muted = self.muted(spec, states, silences, now)
        decision = observe(state, outcome.ok, spec, now, muted is not None)
        state.last_detail, state.last_seconds = outcome.detail, outcome.seconds
        state.last_data = outcome.data
        actions = list(outcome.actions)
        said = outcome.detail  # what the alert says: the check's detail, then the remedy's
        if decision.remedy:
            actions.append(remedy := remedies.apply(spec.remedy))
            said += "\n" + remedies.describe(remedy)
        sent = events(state, decision, muted is not None, now, self.config.repeat_interval)
        if spec.alert:
            for event in sent:
                actions.append(alerts.send(self.channels, event, name, spec, state, said))
                state.last_alert = now
        if "resolved" in sent or not state.firing:
            state.last_alert = None
        actions += self._hook(
            "firing" in sent, "resolved" in sent, name, spec, state, outcome.detail
        )
        for action in actions:
            action.setdefault("check", name)
            action.setdefault("at", iso(now))
        return _result(spec, state, actions, ran=True, muted=muted)

    def _hook(
        self, fire: bool, resolve: bool, name: str, spec: Any, state: CheckState, detail: str
    ) -> list[dict[str, Any]]:
        url, room = self.config.interventions_url, self.config.interventions_room
        token = self.config.interventions_token_env
        if url is None:
            return []
        if fire:
            params = interventions.raise_params(name, spec, state, detail, room)
            return [interventions.call(url, "interventions.raise", params, token)]
        if resolve:
            params = {"key": interventions.key(name), "room": room}
            return [interventions.call(url, "interventions.resolve", params, token)]
        return []


def _status(ok: bool | None, state: CheckState) -> str:
    """ok, failing (below the threshold), firing, escalated, or recovering."""
    if state.escalated:
        return "escalated"
    if state.firing:
        return "recovering" if ok else "firing"
    return "ok" if ok else "failing"


def _due(state: CheckState, interval: float | None, now: float) -> bool:
    # A tenth of slack: a timer firing a moment early must not skip a whole interval.
    return interval is None or state.last_run is None or now - state.last_run >= 0.9 * interval


def _result(
    spec: Any, state: CheckState, actions: list[dict[str, Any]], *, ran: bool,
    muted: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    return {
        "name": spec.name,
        "kind": spec.kind,
        "ok": bool(state.last_ok),
        "status": _status(state.last_ok, state),
        "detail": state.last_detail,
        "seconds": state.last_seconds,
        "data": state.last_data,
        "failures": state.failures,
        "successes": state.successes,
        "since": iso(state.since) if state.since else None,
        "remedies_in_window": len(state.remedies),
        "ran": ran,
        "last_run": iso(state.last_run) if state.last_run else None,
        "muted": muted,
        "actions": actions,
    }


def _history_line(report: dict[str, Any]) -> dict[str, Any]:
    checks = {c["name"]: {"ok": c["ok"], "status": c["status"], "detail": c["detail"][:300]}
              for c in report["checks"]}  # fmt: skip
    return {**{k: report[k] for k in ("started", "seconds", "ok")}, "checks": checks,
            "actions": report["actions"]}  # fmt: skip


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConfigError(
                        f"Another heron watchdog run has held {path} for over {LOCK_WAIT:.0f} "
                        "s; wait for it to end (or stop it) and run again."
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def watch(
    settings: Settings,
    *,
    interval: float,
    path: Path | None = None,
    kinds: Collection[str] = (),
    on_report: Callable[[dict[str, Any]], None] = lambda report: None,
) -> None:
    """Run until interrupted: each check every ``interval`` seconds, or every its own
    ``interval`` (a deploy's: ``HERON_WATCHDOG_DEPLOY_INTERVAL``), waking for the soonest.
    The config is read again before each run, so an edit takes effect on the next; a
    broken edit is logged and the last good config kept (a typo must not stop the
    watching), but a broken first one raises."""
    config = None
    while True:
        started = time.monotonic()
        try:
            config = load_config(path, settings)
        except ConfigError as exc:
            if config is None:
                raise
            log.error("%s The previous watchdog config stays in force.", exc)
        watchdog = Watchdog(config, settings)
        on_report(watchdog.run_once(kinds=kinds, default_interval=interval))
        wanted = [c for c in config.checks if not kinds or c.kind in kinds]
        tick = min([interval, *(watchdog.interval(c, interval) or interval for c in wanted)])
        time.sleep(max(0.0, tick - (time.monotonic() - started)))
