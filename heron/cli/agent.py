"""``heron ask``, ``heron chat`` and ``heron demo``: the agent from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from heron.agent import Answer, Citations, Final, Token, ToolUse, ToolUsed, open_agent
from heron.cli.output import console, errors, print_json
from heron.errors import HeronError, InputError
from heron.settings import Settings

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
LibraryOption = Annotated[str | None, typer.Option(help="Ground answers in this library only.")]
ModelOption = Annotated[str | None, typer.Option(help="Model alias from models.yml.")]
SessionOption = Annotated[
    str | None, typer.Option("--session", help="Continue this conversation (its id).")
]
#: What ``heron demo`` asks, one grounded in each kind of source.
DEMO_QUESTIONS = (
    "What is Heron?",
    "How does Heron pick tools?",
    "List the files in my workspace",
    "Summarize the skills index",
)
DEMO_MAX_TOKENS = 200
#: Lines of a tool's result shown under an answer.
RESULT_LINES = 20


def _tool_lines(use: ToolUse) -> list[str]:
    if not use.ok:
        return [f"error: {use.error}"]
    result = use.result
    if isinstance(result, list) and all(isinstance(x, str) for x in result):
        lines = result  # a listing: one entry a line
    else:
        lines = (result if isinstance(result, str) else json.dumps(result, indent=1)).splitlines()
    more = [f"... {len(lines) - RESULT_LINES} more lines"] if len(lines) > RESULT_LINES else []
    return lines[:RESULT_LINES] + more


def show_tool(use: ToolUse) -> None:
    forced = ", forced" if use.forced else ""
    args = json.dumps(use.arguments, ensure_ascii=False)
    console.print(f"[dim]tool {use.name}({args}){forced}, {use.seconds:.2f} s[/]", markup=True)
    for line in _tool_lines(use):
        console.print(f"  {line}", markup=False, highlight=False)


def show_sources(answer: Answer) -> None:
    for number, c in enumerate(answer.citations, 1):
        first, last = c.line_range
        heading = f" > {c.heading}" if c.heading else ""
        console.print(
            f"[{number}] {c.label}{heading}  {c.url_or_path}:{first}-{last}",
            markup=False,
            highlight=False,
        )
    t = answer.timings
    console.print(
        f"[dim]{answer.model}, triage {answer.triage.kind} ({answer.triage.reason}); "
        f"{answer.usage.prompt_tokens}+{answer.usage.completion_tokens} tokens; "
        f"{t['total']:.2f} s, model {t['model']:.2f} s, overhead {t['overhead'] * 1000:.0f} ms"
        + (f"; skills: {', '.join(answer.skills)}" if answer.skills else "")
        + "[/]"
    )


def show(answer: Answer) -> None:
    for use in answer.tools:
        show_tool(use)
    console.print(answer.answer.strip() or "(no answer text)", markup=False, highlight=False)
    show_sources(answer)


def ask(
    message: Annotated[str, typer.Argument(help="The question.")],
    library: LibraryOption = None,
    model: ModelOption = None,
    session: SessionOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Answer a question from the libraries, the tools and the model, with citations.

    Example: heron ask "How does Heron pick tools?" --json
    """
    agent = open_agent()
    try:
        answer = agent.ask(message, session_id=session, library=library, model=model)
    finally:
        agent.close()
    if as_json:
        print_json(answer.to_dict())
    else:
        show(answer)


def chat(
    library: LibraryOption = None,
    model: ModelOption = None,
    session: SessionOption = None,
) -> None:
    """Talk to the agent; answers stream as they are written. Ctrl-D or /exit ends.

    Example: heron chat --session 0f3a
    """
    agent = open_agent()
    try:
        while True:
            try:
                message = console.input("[bold]you>[/] ")
            except EOFError:
                break
            if message.strip() in ("/exit", "/quit"):
                break
            if not message.strip():
                continue
            try:
                for event in agent.stream(
                    message, session_id=session, library=library, model=model
                ):
                    if isinstance(event, Token):
                        console.print(event.text, end="", markup=False, highlight=False)
                    elif isinstance(event, ToolUsed):
                        show_tool(event.tool)
                    elif isinstance(event, Citations):
                        console.print()
                    elif isinstance(event, Final):
                        show_sources(event.answer)
                        session = event.answer.session_id
            except HeronError as exc:  # one bad message does not end the conversation
                errors.print(f"error: {exc}", markup=False, highlight=False)
    finally:
        agent.close()
    if session:
        console.print(
            f"[dim]session {session}; continue it with: heron chat --session {session}[/]"
        )


def demo(
    root: Annotated[
        Path | None, typer.Option(help="Workspace the file tools read; default: here.")
    ] = None,
    model: ModelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Index Heron's own docs, then answer four questions with citations and tools.

    The workspace tools are read-only here. Example: heron demo --root ~/projects/heron
    """
    from heron.books import index_library
    from heron.books.config import DEFAULT_DOCS_NAME, heron_docs

    if heron_docs() is None:
        raise InputError(
            "heron demo needs Heron's docs/ folder, which only a source checkout has; "
            "run it from a clone of the repository."
        )
    workspace = (root or Path.cwd()).resolve()
    # The bundled model drifts into loops on long answers: the demo keeps them short.
    tokens = min(Settings().agent_max_tokens, DEMO_MAX_TOKENS)
    agent = open_agent(
        Settings(tools_root=workspace, agent_tool_safety="read", agent_max_tokens=tokens)
    )
    try:
        report = index_library(DEFAULT_DOCS_NAME, agent.store, settings=agent.settings)
        if report.error:
            raise InputError(f"Cannot index Heron's docs: {report.error}")
        if not as_json:
            console.print(
                f"[dim]library {DEFAULT_DOCS_NAME}: {report.pages} pages, "
                f"{report.embedded} embedded; workspace {workspace} (read-only)[/]"
            )
        for question in DEMO_QUESTIONS:
            answer = agent.ask(question, model=model)
            if as_json:
                print_json({"question": question, **answer.to_dict()})
                continue
            console.print(f"\n[bold]> {question}[/]")
            show(answer)
    finally:
        agent.close()


def register_agent(app: typer.Typer) -> None:
    """Add ``ask``, ``chat`` and ``demo`` to the ``heron`` command."""
    app.command("ask")(ask)
    app.command("chat")(chat)
    app.command("demo")(demo)
