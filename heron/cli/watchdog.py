"""``heron watchdog``: run the checks of ``watchdog.yml`` once or in a loop; ``report``;
``silence``, ``silences`` and ``expire``. The settings and the watchdog are imported when
a command runs (the rule in ``heron.cli``'s docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from heron.cli.output import console, print_json

watchdog_app = typer.Typer(
    help="Watch Heron: checks, remedies with a budget, alerts, sync-deploy (docs/operations.md)."
)

_COLOURS = {"ok": "green", "failing": "yellow", "firing": "red", "escalated": "red",
            "recovering": "yellow"}  # fmt: skip


def show(report: dict[str, Any], as_json: bool) -> None:
    """The report: JSON for scripts; else a line per check and per action taken."""
    if as_json:
        print_json(report)
        return
    verdict = "[green]all checks pass[/]" if report["ok"] else "[red]checks fail[/]"
    console.print(f"{escape(report['started'])}  {verdict}  ({report['seconds']:.2f} s)")
    for check in report["checks"]:
        status = check["status"]
        mark = f"[{_COLOURS.get(status, 'default')}]{escape(status.upper()):<10}[/]"
        muted = f" [dim]({escape(check['muted'])})[/]" if check.get("muted") else ""
        console.print(f"  {mark} {escape(check['name'])}: {escape(check['detail'])}{muted}")
    for action in report["actions"]:
        state = "done" if action.get("ok") else "FAILED"
        what = action.get("alert") or action.get("remedy") or action.get("method") or ""
        console.print(
            f"  -> {escape(action['check'])}: {escape(action['action'])} {escape(what)} "
            f"{state}: {escape(str(action.get('detail', '')))}"
        )


@watchdog_app.callback(invoke_without_command=True)
def watchdog(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Run the checks once and exit.")] = False,
    interval: Annotated[
        str | None,
        typer.Option(help="Seconds or 30s/5m/1h between runs; default HERON_WATCHDOG_INTERVAL."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="The checks file; default $HERON_HOME/watchdog.yml.")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="With --once: exit status 1 when a check fails.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print each report as JSON.")] = False,
    kind: Annotated[
        list[str] | None,
        typer.Option(help="Run only the checks of this kind (repeatable), e.g. deploy."),
    ] = None,
) -> None:
    """Run the watchdog: --once for a timer, else a loop every --interval.

    Without a watchdog.yml it checks heron doctor, the disk under HERON_HOME, and the local
    server's /health and /ready when it is running.

    Example: heron watchdog --once --strict
    """
    if ctx.invoked_subcommand is not None:
        return
    from heron.cli.settings import command_settings
    from heron.ops.watchdog import Watchdog, load_config, parse_duration, watch
    from heron.ops.watchdog.config import KINDS

    settings = command_settings()
    kinds = kind or []
    if unknown := [k for k in kinds if k not in KINDS]:
        raise typer.BadParameter(
            f"no check kind {', '.join(unknown)}; kinds: {', '.join(KINDS)}", param_hint="--kind"
        )
    if once:
        report = Watchdog(load_config(config, settings), settings).run_once(kinds=kinds)
        show(report, as_json)
        if strict and not report["ok"]:
            raise typer.Exit(1)
        return
    try:
        seconds = parse_duration(interval) if interval else settings.ops.watchdog_interval
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--interval") from None
    watch(settings, interval=seconds, path=config, kinds=kinds,
          on_report=lambda report: show(report, as_json))  # fmt: skip


@watchdog_app.command("report")
def report(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the latest watchdog report ($HERON_HOME/watchdog-latest.json).

    Example: heron watchdog report --json
    """
    from heron.cli.settings import command_settings
    from heron.ops.watchdog import latest_path, read_latest

    show(read_latest(latest_path(command_settings().home)), as_json)


@watchdog_app.command("silence")
def silence(
    check: Annotated[str, typer.Argument(help="A check's name, or a glob (server-*).")],
    for_: Annotated[str, typer.Option("--for", help="How long: 30m, 2h, 1h30m, 1d.")],
    reason: Annotated[str, typer.Option(help="Why, shown in reports and listings.")],
    config: Annotated[
        Path | None, typer.Option(help="The checks file; default $HERON_HOME/watchdog.yml.")
    ] = None,
) -> None:
    """Mute a check: it runs and is recorded, but sends nothing and runs no remedy.

    When the silence ends, a check that still fails sends FIRING once.

    Example: heron watchdog silence api --for 2h --reason "database upgrade"
    """
    import fnmatch
    import getpass
    import time

    from heron.cli.settings import command_settings
    from heron.ops.watchdog import load_config, parse_duration
    from heron.ops.watchdog.silences import Silences

    try:
        seconds = parse_duration(for_)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--for") from None
    if not reason.strip():
        raise typer.BadParameter("say why (it is shown to whoever looks)", param_hint="--reason")
    settings = command_settings()
    names = [c.name for c in load_config(config, settings).checks]
    matched = [n for n in names if fnmatch.fnmatchcase(n, check)]
    if not matched:
        raise typer.BadParameter(
            f"no check is named {check!r}; checks: {', '.join(names) or 'none'}",
            param_hint="CHECK",
        )
    made = Silences(settings.home).add(check, seconds, reason.strip()[:500], getpass.getuser(),
                                       time.time())  # fmt: skip
    console.print(
        f"Silence {escape(made.id)}: {escape(', '.join(matched))} muted until {_when(made.ends)} "
        f"(heron watchdog expire {escape(made.id)} ends it sooner)."
    )


@watchdog_app.command("silences")
def silences(
    all_: Annotated[bool, typer.Option("--all", help="Ended ones too (kept a week).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the active silences (--all: ended ones too).

    Example: heron watchdog silences --json
    """
    import dataclasses
    import time

    from heron.cli.settings import command_settings
    from heron.ops.watchdog.silences import Silences

    now = time.time()
    found = [s for s in Silences(command_settings().home).load() if all_ or s.active(now)]
    if as_json:
        print_json([{**dataclasses.asdict(s), "active": s.active(now)} for s in found])
        return
    if not found:
        console.print("No silences." if all_ else "No active silences.")
    for s in found:
        state = "active" if s.active(now) else "ended"
        console.print(
            f"  {escape(s.id)}  {escape(s.matcher)}  {state} until {_when(s.ends)}  by "
            f"{escape(s.by)}: {escape(s.reason)}"
        )


@watchdog_app.command("expire")
def expire(silence_id: Annotated[str, typer.Argument(help="The silence's id.")]) -> None:
    """End a silence now; a check still failing sends [FIRING] on its next run.

    Example: heron watchdog expire 3f9a1c2e
    """
    import time

    from heron.cli.settings import command_settings
    from heron.ops.watchdog.silences import Silences

    ended = Silences(command_settings().home).expire(silence_id, time.time())
    console.print(f"Silence {escape(ended.id)} ({escape(ended.matcher)}) ended.")


def _when(seconds: float) -> str:
    from heron.ops.watchdog.state import iso

    return iso(seconds)
