"""``doctor()``: every diagnostic an operator would run by hand, in one call.

>>> report = doctor(Settings(), offline=True)                    # doctest: +SKIP
>>> report.ok, [c.name for c in report.checks if not c.ok]       # doctest: +SKIP
(False, ['libraries'])
>>> report.checks[3].fix                                          # doctest: +SKIP
'run: heron index docs'

``Report.to_dict()`` is the JSON of ``heron doctor --json``, ``ops.doctor`` and
``GET /doctor``; the watchdog reads it, so its shape is fixed::

    {"ok": bool, "seconds": float,
     "checks": [{"name", "ok", "status": "ok|warn|fail|skip", "detail", "fix", "seconds",
                 "data": {...}}]}

Checks run in ``CHECKS`` order: the store before what reads it, ``mcp`` before
``tools`` (the tool index covers the servers' tools). A check that raises ``HeronError``
fails with the error's message; any other exception fails too, named, so that one broken
part never hides the report on the rest.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heron.errors import HeronError, InputError
from heron.ops.doctor_checks import (
    Blocked,
    Check,
    Context,
    check_disk,
    check_embedder,
    check_extras,
    check_libraries,
    check_settings,
    check_store,
    check_tools,
    check_translation,
)
from heron.ops.doctor_services import (
    check_jobs,
    check_mcp,
    check_models,
    check_replicas,
    check_skills,
)
from heron.redact import redact
from heron.settings import Settings

if TYPE_CHECKING:
    from heron.store import Store

log = logging.getLogger("heron.ops.doctor")

CHECKS: dict[str, Callable[[Context], Check]] = {
    "settings": check_settings,
    "extras": check_extras,
    "translation": check_translation,
    "disk": check_disk,
    "store": check_store,
    "embedder": check_embedder,
    "libraries": check_libraries,
    "mcp": check_mcp,
    "tools": check_tools,
    "models": check_models,
    "skills": check_skills,
    "jobs": check_jobs,
    "replicas": check_replicas,
}
#: Checks another needs run first: the tool index covers the MCP servers' tools.
NEEDS = {"tools": ("mcp",)}
#: What to run when a check raised instead of answering.
FIXES = {
    "settings": "fix the setting named above, then run: heron doctor --check settings",
    "store": "fix the store as the message says, then run: heron doctor --check store",
    "embedder": "fetch the model: heron embedder fetch",
    "mcp": "fix mcp.json as the message says, then run: heron tools list",
    "models": "fix models.yml as the message says, then run: heron models check",
}


@dataclass
class Report:
    checks: list[Check]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 4),
            "checks": [check.to_dict() for check in self.checks],
        }


def check_names(names: Iterable[str]) -> list[str]:
    """``names`` and what they need (``NEEDS``) in run order, each known; ``InputError``
    listing the known ones."""
    wanted = list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in CHECKS]
    if unknown:
        raise InputError(f"Unknown doctor check {unknown[0]!r}. Choose from: {', '.join(CHECKS)}.")
    wanted += [need for name in wanted for need in NEEDS.get(name, ())]
    return [n for n in CHECKS if n in wanted]


def run_check(name: str, ctx: Context) -> Check:
    started = time.perf_counter()
    try:
        result = CHECKS[name](ctx)
    except Blocked as exc:
        result = Check(name, "skip", str(exc))
    except HeronError as exc:
        result = Check(name, "fail", str(exc), FIXES.get(name, f"run: heron doctor --check {name}"))
    except Exception as exc:  # one broken part must not hide the report on the others
        if os.environ.get("HERON_DEBUG"):
            raise
        log.debug("doctor check %s failed", name, exc_info=True)
        result = Check(
            name,
            "fail",
            f"unexpected {type(exc).__name__}: {redact(str(exc))}",
            "re-run with HERON_DEBUG=1 and report it",
        )
    result.seconds = time.perf_counter() - started
    return result


def unsettled(error: HeronError, *, checks: Iterable[str] = ()) -> Report:
    """The report when the settings themselves do not load (a bad heron.toml, a
    ``HERON_CONFIG`` naming no file): ``settings`` fails with ``error``, which names the
    fix, and every other check of ``checks`` (default: all) is skipped, as each needs
    the settings."""
    names = ["settings", *(n for n in check_names(checks or CHECKS) if n != "settings")]
    failed = Check("settings", "fail", str(error), FIXES["settings"])
    skipped = [Check(name, "skip", "the settings did not load") for name in names[1:]]
    return Report([failed, *skipped], 0.0)


def doctor(
    settings: Settings,
    *,
    checks: Iterable[str] = (),
    offline: bool = False,
    store: Store | None = None,
    writes: bool = True,
) -> Report:
    """Run ``checks`` (default: all) and report each. ``offline``: no model is called and
    no MCP server reached (their files are still checked). ``writes=False``: nothing is
    written (the store's write check is left out), for a server's ``GET /doctor``.
    ``store``: an open store to use (a server's), left open; else one is opened and
    closed here."""
    names = check_names(checks) if checks else list(CHECKS)
    started = time.perf_counter()
    ctx = Context(settings, offline=offline, store=store, writes=writes)
    with ctx:
        results = [run_check(name, ctx) for name in names]
    return Report(results, time.perf_counter() - started)
