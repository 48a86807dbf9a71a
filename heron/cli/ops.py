"""``heron doctor``, ``heron backup`` and ``heron restore``, and ``heron --version``.

The settings and the checks are imported in each command, when it runs (the rule in
``heron.cli``'s docstring): ``heron --version`` prints before any of them loads.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from heron import __version__
from heron.cli.output import console, errors, print_json
from heron.cli.settings import command_settings
from heron.errors import ConfigError

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
MARKS = {
    "ok": "[green]ok  [/]",
    "warn": "[yellow]warn[/]",
    "fail": "[red]fail[/]",
    "skip": "[dim]skip[/]",
}


def show_version(value: bool) -> None:
    """``--version``: print it and stop (an eager option, before any command runs)."""
    if value:
        print(f"heron {__version__} (Python {platform.python_version()})")
        raise typer.Exit()


def doctor(
    check: Annotated[
        list[str] | None,
        typer.Option("--check", help="Run only this check (repeatable): settings, store, ..."),
    ] = None,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Call no model and reach no MCP server (files checked)."),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Check everything an operator checks by hand; exit status 1 if anything fails.

    Checks: settings, extras, translation, disk, store, embedder, libraries, mcp, tools,
    models, skills, jobs, replicas.
    Each failure says what to run next.

    Example: heron doctor --offline --check store --check libraries
    """
    from heron.ops.doctor import doctor as run
    from heron.ops.doctor import unsettled

    try:
        settings = command_settings()
    except ConfigError as exc:  # the doctor's first finding, not a reason to say nothing
        report = unsettled(exc, checks=check or ())
    else:
        report = run(settings, checks=check or (), offline=offline)
    if as_json:
        print_json(report.to_dict())
    else:
        for result in report.checks:
            console.print(
                f"{MARKS[result.status]} {result.name:<10} {escape(result.detail)} "
                f"[dim]({result.seconds:.2f} s)[/]",
                highlight=False,
            )
            if result.fix:
                console.print(f"     {'':<10} [bold]next:[/] {escape(result.fix)}", highlight=False)
        verdict = "[green]all checks pass[/]" if report.ok else "[red]some checks fail[/]"
        console.print(f"{verdict} in {report.seconds:.2f} s")
    if not report.ok:
        raise typer.Exit(1)


def backup(
    dest: Annotated[Path, typer.Argument(help="A new or empty folder to write the backup to.")],
    as_json: JsonFlag = False,
) -> None:
    """Back up the whole HERON_HOME, consistent even while heron serve runs.

    Every SQLite file is copied as one snapshot (SQLite's backup API), every other file
    as it is. On PostgreSQL, also run pg_dump (the command says how).

    Example: heron backup /srv/backups/heron-$(date +%F)
    """
    from heron.ops.backup import backup as run

    report = run(dest, command_settings())
    if as_json:
        print_json(report.to_dict())
        return
    console.print(
        f"backed up {report.source} to {report.dest}: {len(report.databases)} databases, "
        f"{len(report.files)} other files, {report.bytes / 1e6:.1f} MB, {report.seconds:.1f} s"
    )
    for note in report.notes:
        errors.print(f"note: {escape(note)}", highlight=False)


def restore(
    src: Annotated[Path, typer.Argument(help="A folder heron backup wrote.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace a non-empty HERON_HOME (moved aside).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Restore HERON_HOME from a backup, after checking every database in it.

    Stop heron serve first. A non-empty home is replaced only with --force, and kept
    beside it.

    Example: heron restore /srv/backups/heron-2026-12-01 --force
    """
    from heron.ops.backup import restore as run

    report = run(src, command_settings(), force=force)
    if as_json:
        print_json(report.to_dict())
        return
    console.print(
        f"restored {report.dest} from {report.source}: {len(report.databases)} databases "
        f"(integrity checked), {len(report.files)} other files"
    )
    if report.moved_aside:
        console.print(f"the previous home is kept at {report.moved_aside}")
    for note in report.notes:
        errors.print(f"note: {escape(note)}", highlight=False)


def register_ops(app: typer.Typer) -> None:
    """Add ``doctor``, ``backup`` and ``restore`` to ``heron`` (``--version``:
    ``show_version``, on the app's one callback)."""
    app.command("doctor")(doctor)
    app.command("backup")(backup)
    app.command("restore")(restore)
