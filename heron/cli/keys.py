"""``heron keys``: create, list and revoke named API keys, and show their usage.

Each command opens the key store (``heron.keys.open_keys``: ``keys.db`` beside
``heron.db``, or PostgreSQL), calls one method and prints; a running server sees the
change on its next request. The key store and the settings are imported when a command
runs (the rule in ``heron.cli``'s docstring).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from heron.cli.output import console, print_json, table
from heron.cli.settings import command_settings

if TYPE_CHECKING:
    from heron.keys import Key

#: ``heron.keys.SCOPES``, written out so that --help need not import the key store
#: (tests/cli/test_startup.py checks they agree).
SCOPES = ("read", "chat", "tools", "jobs", "admin")

keys_app = typer.Typer(
    help="Named API keys for heron serve: scopes, a context, limits; stored hashed.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Name = Annotated[str, typer.Argument(help="The key's name, e.g. ci-bot.")]


def _limits(key: Key) -> str:
    parts = [
        f"{key.rpm} rpm" if key.rpm else "",
        f"{key.tpm} tpm" if key.tpm else "",
        f"{key.monthly_tokens} tokens/month" if key.monthly_tokens else "",
        f"${key.max_budget:g}" + (f"/{key.budget_duration}" if key.budget_duration else "")
        if key.max_budget is not None
        else "",
        f"models {','.join(key.models)}" if key.models is not None else "",
    ]
    return ", ".join(p for p in parts if p) or "none"


Scopes = Annotated[
    list[str], typer.Option("--scope", help=f"A scope it has (repeat): {', '.join(SCOPES)}.")
]
ContextOption = Annotated[
    str | None, typer.Option("--context", help="The context the key is bound to.")
]
Rpm = Annotated[int | None, typer.Option("--rpm", help="Requests per minute, at most.")]
Tpm = Annotated[
    int | None, typer.Option("--tpm", help="Model tokens (in and out) per minute, at most.")
]
MonthlyTokens = Annotated[
    int | None,
    typer.Option("--monthly-tokens", help="Model tokens per calendar month (UTC), at most."),
]
Models = Annotated[
    list[str] | None,
    typer.Option(
        "--models",
        help="Models it may call (repeat, or comma-separated): aliases, provider/model, "
        "* wildcards (gpt-*, openai/*). Default: any.",
    ),
]
MaxBudget = Annotated[
    float | None,
    typer.Option("--max-budget", help="Dollars its model calls may spend per duration."),
]
BudgetDuration = Annotated[
    str | None,
    typer.Option("--budget-duration", help="The budget's window: 1h, 30d, 1mo...; none: ever."),
]
NoCache = Annotated[
    bool, typer.Option("--no-cache", help="Never answer its requests from the response cache.")
]


@keys_app.command("create")
def create(
    name: Name,
    scope: Scopes,
    context: ContextOption = None,
    rpm: Rpm = None,
    tpm: Tpm = None,
    monthly_tokens: MonthlyTokens = None,
    models: Models = None,
    max_budget: MaxBudget = None,
    budget_duration: BudgetDuration = None,
    no_cache: NoCache = False,
    as_json: JsonFlag = False,
) -> None:
    """Create a key and print its token, once: only its hash is kept.

    Example: heron keys create ci-bot --scope read --scope jobs --rpm 60
    Example: heron keys create team --scope chat --models 'gpt-*' --max-budget 25
    --budget-duration 1mo
    """
    from heron.keys import open_keys

    settings = command_settings()
    with open_keys(settings) as keys:
        key, token = keys.create(
            name,
            scope,
            context=context,
            rpm=rpm,
            tpm=tpm,
            monthly_tokens=monthly_tokens,
            models=None if models is None else [m for ms in models for m in ms.split(",")],
            max_budget=max_budget,
            budget_duration=budget_duration,
            no_cache=no_cache,
        )
    if as_json:
        print_json(key.to_dict() | {"token": token})
    else:
        console.print(escape(f"Created key {key.name} ({' '.join(sorted(key.scopes))})."))
        console.print("Its token, shown this once (send it as 'Authorization: Bearer ...'):")
        print(token)
    if settings.server.bearer_token is None:
        print(
            "note: HERON_API_TOKEN is not set, so heron serve (on loopback) lets requests "
            "without a key do everything; set it to make every caller show a key.",
            file=sys.stderr,
        )


@keys_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """The keys, revoked ones too: name, scopes, context, limits; never a token.

    Example: heron keys list --json
    """
    from heron.keys import open_keys

    with open_keys(command_settings()) as keys:
        found = keys.list()
    if as_json:
        print_json([key.to_dict() for key in found])
        return
    if not found:
        console.print("No keys yet; create one: heron keys create NAME --scope read")
        return
    grid = table("name", "scopes", "context", "limits", "token starts", "state")
    for key in found:
        data = key.to_dict()
        state = f"revoked {data['revoked_at']}" if key.revoked else "active"
        grid.add_row(
            escape(key.name),
            " ".join(data["scopes"]),
            escape(key.context or "-"),
            _limits(key),
            escape(key.shown),
            state,
        )
    console.print(grid)


@keys_app.command("revoke")
def revoke(name: Name, as_json: JsonFlag = False) -> None:
    """Revoke a key: its token opens nothing from the next request on.

    It stays listed, with its usage.

    Example: heron keys revoke ci-bot
    """
    from heron.keys import open_keys

    with open_keys(command_settings()) as keys:
        key = keys.revoke(name)
    if as_json:
        print_json(key.to_dict())
    else:
        console.print(escape(f"Revoked key {key.name}."))


@keys_app.command("usage")
def usage(
    month: Annotated[
        str | None, typer.Option("--month", help="YYYY-MM (UTC); default: this month.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Requests, model tokens and dollars spent per key in a month.

    A running server writes its counts every HERON_KEYS_FLUSH seconds, what calls cost
    as they end. Spend per context and per model: heron keys spend.

    Example: heron keys usage --month 2026-03
    """
    from heron.keys import open_keys

    with open_keys(command_settings()) as keys:
        found = keys.usage(month)
        spend = keys.spend(month)
    dollars: dict[str, float] = {}
    for payer, _model, cost in spend:
        if payer.startswith("key:"):
            dollars[payer[4:]] = dollars.get(payer[4:], 0.0) + cost
    if as_json:
        print_json([u.to_dict() | {"spend": round(dollars.get(u.name, 0.0), 6)} for u in found])
        return
    if not found:
        console.print("No usage recorded for that month.")
        return
    grid = table("key", "month", "requests", "tokens in", "tokens out", "spent $")
    for u in found:
        grid.add_row(
            escape(u.name),
            u.month,
            str(u.requests),
            str(u.tokens_in),
            str(u.tokens_out),
            f"{dollars.get(u.name, 0.0):.6f}",
        )
    console.print(grid)


@keys_app.command("spend")
def spend(
    month: Annotated[
        str | None, typer.Option("--month", help="YYYY-MM (UTC); default: this month.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Dollars spent in a month per key, per context and per model, by model called.

    Example: heron keys spend --json
    """
    from heron.keys import open_keys

    with open_keys(command_settings()) as keys:
        rows = keys.spend(month)
    found = [
        {"kind": payer.partition(":")[0], "name": payer.partition(":")[2], "model": model,
         "spend": round(cost, 6)}
        for payer, model, cost in rows
    ]  # fmt: skip
    if as_json:
        print_json(found)
        return
    if not found:
        console.print("No spend recorded for that month (free models cost nothing).")
        return
    grid = table("kind", "name", "model", "spent $")
    for row in found:
        grid.add_row(row["kind"], escape(row["name"]), escape(row["model"]), f"{row['spend']:.6f}")
    console.print(grid)
