"""``heron tools``: import tool definitions, list every tool, route queries, call a tool.

The toolbox is imported when a command runs (the rule in ``heron.cli``'s docstring).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from heron.cli.output import (
    QueriesOption,
    console,
    errors,
    print_batch,
    print_json,
    query_batch,
    say,
)
from heron.cli.settings import command_settings

if TYPE_CHECKING:
    from heron.tools import Route
    from heron.tools.mcp_client import ServerStatus

# Written out so that --help need not import the tools (tests/cli/test_startup.py checks
# they agree with heron.tools.router's and heron.core.names.PROFILES).
ROUTE_MODES = ("pattern", "semantic", "hybrid")
DEFAULT_MODE = "hybrid"
DEFAULT_TOP_K = 10
DEFAULT_THRESHOLD = 0.25
PROFILES = ("openai", "anthropic", "gemini", "strict")

tools_app = typer.Typer(
    help="Tools for agents: built-ins, imported definitions and MCP servers, routed per query.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
McpConfig = Annotated[
    Path | None,
    typer.Option("--mcp-config", help="mcp.json to read (default $HERON_HOME/mcp.json)."),
]
Root = Annotated[
    Path | None, typer.Option("--root", help="Workspace root for the file and command tools.")
]
Allow = Annotated[
    list[str] | None, typer.Option("--allow", help="A program run_command may run (repeatable).")
]


def _report_servers(statuses: list[ServerStatus]) -> None:
    for status in statuses:
        if status.error:
            errors.print(
                f"[yellow]skipped MCP server {escape(status.name)}[/]: {escape(status.error)}"
            )
        for warning in status.warnings:  # tools it listed that Heron refused or cut
            errors.print(f"[yellow]MCP server {escape(status.name)}[/]: {escape(warning)}")


@tools_app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="JSON: OpenAI, Anthropic or MCP tools/list format.")],
    as_json: JsonFlag = False,
) -> None:
    """Register tool definitions that live outside MCP, kept in the store.

    Example: heron tools import tools.json
    """
    from heron.tools import read_tool_file, save_imported
    from heron.wiring.tools import open_tools

    tools = read_tool_file(file)
    box = open_tools(command_settings(), connect=False)
    with box:
        save_imported(box.store, tools)
    if as_json:
        print_json(
            {"imported": [t.name for t in tools], "source": tools[0].source if tools else None}
        )
    else:
        console.print(f"imported {len(tools)} tools from {escape(str(file))}")


@tools_app.command("list")
def list_(
    mcp_config: McpConfig = None,
    root: Root = None,
    allow: Allow = None,
    as_json: JsonFlag = False,
) -> None:
    """List every tool: built-in, imported and from the MCP servers (failing ones skipped).

    Example: heron tools list --json
    """
    from heron.wiring.tools import open_tools

    box = open_tools(command_settings(), mcp_config=mcp_config, root=root, commands=allow or ())
    with box:
        tools = box.registry.tools()
        if as_json:
            print_json(
                {
                    "servers": [s.to_dict() for s in box.statuses],
                    "tools": [t.to_dict() for t in tools],
                }
            )
            return
        _report_servers(box.statuses)
        for tool in tools:
            console.print(
                f"[bold]{escape(tool.name)}[/] [dim]({escape(tool.source)}, {tool.safety})[/]  "
                f"{escape(tool.description[:90])}"
            )
        console.print(f"{len(tools)} tools")


def _print_route(route: Route) -> None:
    for warning in route.warnings:
        errors.print(f"[yellow]{escape(warning)}[/]")
    console.print(f"mode {route.mode}, {len(route.tools)} tools for {route.profile.name}:")
    for t in route.tools:
        console.print(
            f"  [green]kept[/]    {escape(t.tool.name)} as {escape(t.name)}  score {t.score:.3f} "
            f"[dim](cos {t.dense_score:.3f}, bm25 {t.lexical_score:.2f}; {escape(t.reason)})[/]"
        )
    for t in route.dropped:
        console.print(
            f"  [red]dropped[/] {escape(t.tool.name)}  score {t.score:.3f} "
            f"[dim](cos {t.dense_score:.3f}, bm25 {t.lexical_score:.2f}; {escape(t.reason)})[/]"
        )


@tools_app.command("route")
def route(
    query: Annotated[str | None, typer.Argument(help="The request to find tools for.")] = None,
    queries: QueriesOption = None,
    mode: Annotated[str, typer.Option(help=f"One of: {', '.join(ROUTE_MODES)}.")] = DEFAULT_MODE,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Tools per query.")] = DEFAULT_TOP_K,
    threshold: Annotated[
        float | None,
        typer.Option(
            help="Minimum cosine (semantic; hybrid unless words match); default: the "
            f"embedder profile's (MiniLM {DEFAULT_THRESHOLD})."
        ),
    ] = None,
    profile: Annotated[
        str, typer.Option(help=f"Provider rules for names and limits: {', '.join(PROFILES)}.")
    ] = "strict",
    always: Annotated[
        list[str] | None, typer.Option("--always", help="A tool to offer every time (repeatable).")
    ] = None,
    mcp_config: McpConfig = None,
    root: Root = None,
    as_json: JsonFlag = False,
) -> None:
    """Pick the tools to offer for a request, with each tool's scores and why.

    Every candidate is listed as kept or dropped, with the reason.

    Example: heron tools route "add a contact to the CRM" --profile openai --top-k 5
    """
    from heron.wiring.tools import open_tools

    batch = query_batch(query, queries)
    box = open_tools(command_settings(), mcp_config=mcp_config, root=root)
    with box:
        _report_servers(box.statuses)
        router = box.router(
            mode=mode,
            top_k=top_k,
            threshold=threshold,
            profile=profile,
            always_include=always or (),
        )
        routes = router.route_many([text for _, text in batch])
        if queries is not None:
            print_batch(batch, ([t.to_dict() for t in route.tools] for route in routes))
            return
        result = routes[0]
        if as_json:
            print_json(result.to_dict())
        else:
            _print_route(result)


@tools_app.command("call")
def call(
    name: Annotated[str, typer.Argument(help="The tool's original name (see heron tools list).")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    mcp_config: McpConfig = None,
    root: Root = None,
    allow: Allow = None,
    as_json: JsonFlag = False,
) -> None:
    """Call one tool with JSON arguments and print its result.

    Example: heron tools call list_files --root . --args '{"path": "docs"}'
    """
    from heron.core.errors import ToolInputError
    from heron.tools.builtin import check_arguments
    from heron.wiring.tools import open_tools

    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as exc:
        raise ToolInputError(
            f'--args is not valid JSON ({exc}); write e.g. \'{{"path": "."}}\'.'
        ) from exc
    box = open_tools(command_settings(), mcp_config=mcp_config, root=root, commands=allow or ())
    with box:
        _report_servers(box.statuses)
        if isinstance(arguments, dict):  # registry.call says what else --args must be
            check_arguments(box.registry.get(name), arguments)
        result = box.registry.call(name, arguments)
    if as_json or not isinstance(result, str):
        print_json({"name": name, "result": result} if as_json else result)
    else:
        say(result)
