"""``heron watchdog``: run the checks of ``watchdog.yml`` once or in a loop; ``report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from heron.cli.output import console, print_json
from heron.settings import Settings

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
        console.print(f"  {mark} {escape(check['name'])}: {escape(check['detail'])}")
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
) -> None:
    """Run the watchdog: --once for a timer, else a loop every --interval.

    Without a watchdog.yml it checks heron doctor, the disk under HERON_HOME, and the local
    server's /health and /ready when it is running.

    Example: heron watchdog --once --strict
    """
    if ctx.invoked_subcommand is not None:
        return
    from heron.ops.watchdog import Watchdog, load_config, parse_duration, watch

    settings = Settings()
    if once:
        report = Watchdog(load_config(config, settings), settings).run_once()
        show(report, as_json)
        if strict and not report["ok"]:
            raise typer.Exit(1)
        return
    try:
        seconds = parse_duration(interval) if interval else settings.watchdog_interval
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--interval") from None
    watch(settings, interval=seconds, path=config, on_report=lambda report: show(report, as_json))


@watchdog_app.command("report")
def report(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the latest watchdog report ($HERON_HOME/watchdog-latest.json).

    Example: heron watchdog report --json
    """
    from heron.ops.watchdog import latest_path, read_latest

    show(read_latest(latest_path(Settings().home)), as_json)
