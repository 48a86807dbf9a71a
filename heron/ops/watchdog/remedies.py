"""The targeted repairs a check may name: restart a systemd unit, run a command, or
re-index a library. Each is one argv list run with a timeout (``programs.run_program``);
the result is a record for the report, whatever happened.
"""

from __future__ import annotations

from typing import Any

from heron.ops.watchdog import config as cfg
from heron.ops.watchdog.programs import Ran, environment, heron_argv, run_program, systemd_available
from heron.redact import redact


def remedy_argv(remedy: Any) -> list[str]:
    """The command line a remedy runs.

    >>> remedy_argv(cfg.SystemdRemedy(kind="systemd", unit="heron.service"))
    ['systemctl', 'restart', '--', 'heron.service']
    """
    if isinstance(remedy, cfg.SystemdRemedy):
        return ["systemctl", "restart", "--", remedy.unit]
    if isinstance(remedy, cfg.ReindexRemedy):
        return heron_argv("index", remedy.library)
    return list(remedy.argv)


def apply(remedy: Any) -> dict[str, Any]:
    """Run ``remedy``; the action record (``ok``, ``detail``, ``argv``, ``seconds``)."""
    argv = remedy_argv(remedy)
    shown = [redact(arg) for arg in argv]  # a token given as an argument stays out
    record: dict[str, Any] = {"action": "remedy", "remedy": remedy.kind, "argv": shown}
    if isinstance(remedy, cfg.SystemdRemedy) and (missing := systemd_available()):
        return {**record, "ok": False, "detail": missing, "seconds": 0.0}
    if isinstance(remedy, cfg.CommandRemedy):
        ran = run_program(argv, timeout=remedy.timeout, env=environment(remedy.environment),
                          cwd=remedy.cwd)  # fmt: skip
    else:
        ran = run_program(argv, timeout=remedy.timeout, env=environment(heron=True))
    return {**record, **result(ran)}


def result(ran: Ran) -> dict[str, Any]:
    return {"ok": ran.ok, "detail": ran.summary(), "seconds": round(ran.seconds, 3)}


def describe(record: dict[str, Any]) -> str:
    """One line for an alert: ``Remedy ran: systemctl restart -- heron.service (exit ...)``."""
    verdict = "ran" if record["ok"] else "FAILED"
    return f"Remedy {verdict}: {' '.join(record['argv'])} ({record['detail']})"
