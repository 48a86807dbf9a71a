"""``heron ask``, ``heron chat`` and ``heron demo``: the agent from the command line.

``heron ask`` goes through a running ``heron serve`` of the same home when there is one
(``heron.cli.remote``), else opens the agent here; either way it prints the answer's
dict (``Answer.to_dict()``) the same way. The agent, the settings and the models are
imported when a command runs (the rule in ``heron.cli``'s docstring).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from heron.cli import remote
from heron.cli.libraries import page_label
from heron.cli.output import console, errors, print_json, working
from heron.cli.settings import command_settings
from heron.errors import HeronError, InputError

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
# A list, so that a repeated --library is seen and refused (``one_library``) rather than
# the last one kept without a word.
LibraryOption = Annotated[
    list[str] | None, typer.Option(help="Ground answers in this library only (one).")
]
ModelOption = Annotated[str | None, typer.Option(help="Model alias from models.yml.")]
SessionOption = Annotated[
    str | None, typer.Option("--session", help="Continue this conversation (its id).")
]
RoomOption = Annotated[
    str | None,
    typer.Option(
        help="The room that shares the conversation: the jobs the agent delegates go to its "
        "stream. Default: HERON_INTERVENTIONS_ROOM."
    ),
]
AnswerOption = Annotated[
    str | None,
    typer.Option(
        "--answer",
        help="extractive: quoted from the passages, no model call; generative: written by "
        "the model. Default: the model's (answers: in models.yml; local: extractive).",
    ),
]
#: What ``heron demo`` asks, one grounded in each kind of source. The docs questions name
#: Heron: its own docs are searched only for questions about it.
DEMO_QUESTIONS = (
    "What is Heron?",
    "How does Heron pick tools?",
    "List the files in my workspace",
    "Summarize Heron's skills index",
)
DEMO_MAX_TOKENS = 200
#: Lines of a tool's result shown under an answer.
RESULT_LINES = 20


def one_library(libraries: list[str] | None, command: str) -> str | None:
    """The one ``--library`` given, ``None`` for none; ``InputError`` for several: the
    agent grounds a turn in one library, or in all of the user's."""
    names = list(dict.fromkeys(libraries or ()))
    if len(names) <= 1:
        return names[0] if names else None
    flags = " ".join(f"--library {name}" for name in names)
    raise InputError(
        f"--library given {len(names)} times ({', '.join(names)}): heron {command} grounds "
        "its answers in one library, or without --library in all of yours. Give one, or "
        f'search them together with: heron search "QUESTION" {flags}'
    )


def _tool_lines(use: dict[str, Any]) -> list[str]:
    if not use["ok"]:
        return [f"error: {use['error']}"]
    result = use["result"]
    if isinstance(result, list) and all(isinstance(x, str) for x in result):
        lines = result  # a listing: one entry a line
    else:
        lines = (result if isinstance(result, str) else json.dumps(result, indent=1)).splitlines()
    more = [f"... {len(lines) - RESULT_LINES} more lines"] if len(lines) > RESULT_LINES else []
    return lines[:RESULT_LINES] + more


def show_tool(use: dict[str, Any]) -> None:
    """One tool call (``ToolUse.to_dict()``) and the first lines of its result."""
    forced = ", forced" if use["forced"] else ""
    args = json.dumps(use["arguments"], ensure_ascii=False)
    console.print(
        f"[dim]tool {use['name']}({args}){forced}, {use['seconds']:.2f} s[/]", markup=True
    )
    for line in _tool_lines(use):
        console.print(f"  {line}", markup=False, highlight=False)


def show_sources(answer: dict[str, Any], described: str = "") -> None:
    """What ``heron ask`` prints under an answer (``Answer.to_dict()``): its sources,
    notes, then ``described`` (``heron.agent.how``), triage, tokens and times."""
    for number, c in enumerate(answer["citations"], 1):
        if c.get("job"):  # a delegated job's result: its id, its task, where to read it
            line = f"[{number}] job {c['job']}: {c['heading']}  (heron jobs show {c['job']})"
            console.print(line, markup=False, highlight=False)
            continue
        first, last = c["line_range"]
        heading = f" > {c['heading']}" if c["heading"] else ""
        # A paged document's link opens at its page (url_or_path ends #page=N); lines of
        # the Markdown read from it would mean nothing in the file.
        at = f"  {page_label(c['pages'])}" if c.get("pages") else f":{first}-{last}"
        console.print(
            f"[{number}] ({c['library']}, {c['page']}){heading}  {c['url_or_path']}{at}",
            markup=False,
            highlight=False,
        )
    for note in answer["notes"]:
        console.print(f"note: {note}", style="dim", markup=False, highlight=False)
    t, usage, triage = answer["timings"], answer["usage"], answer["triage"]
    console.print(
        f"{described or answer['model']}; triage {triage['kind']} ({triage['reason']}); "
        f"{usage['prompt_tokens']}+{usage['completion_tokens']} tokens; "
        f"{t['total']:.2f} s, model {t['model']:.2f} s, overhead {t['overhead'] * 1000:.0f} ms"
        + (f"; skills: {', '.join(answer['skills'])}" if answer["skills"] else ""),
        style="dim",
        markup=False,
        highlight=False,
    )


def show(answer: dict[str, Any], described: str = "") -> None:
    for use in answer["tools"]:
        show_tool(use)
    console.print(answer["answer"].strip() or "(no answer text)", markup=False, highlight=False)
    show_sources(answer, described)


def ask(
    message: Annotated[str, typer.Argument(help="The question.")],
    library: LibraryOption = None,
    model: ModelOption = None,
    session: SessionOption = None,
    answer_mode: AnswerOption = None,
    room: RoomOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Answer a question from the libraries, the tools and the model, with citations.

    Under the answer: its sources, then which model answered and how (quoted from the
    passages, or generated). Example: heron ask "How does Heron pick tools?" --json
    """
    chosen = one_library(library, "ask")
    asked = {
        "message": message,
        "session_id": session,
        "library": chosen,
        "model": model,
        "answer": answer_mode,
        "room": room,
    }
    with working("searching and answering"):
        reply = remote.call("ask", "agent.ask", asked)
    if reply is None:  # no server of this home, or it failed: the agent opens here
        reply = _ask_here(asked)
    if as_json:
        print_json(reply["answer"])
    else:
        show(reply["answer"], reply["how"])


def _ask_here(asked: dict[str, Any]) -> dict[str, Any]:
    """What the server's ``agent.ask`` answers (``heron.server.features.local``), computed here."""
    from heron.agent import Turn
    from heron.agent.how import how
    from heron.wiring.agent import open_agent

    with working("opening the libraries, tools and models"):
        agent = open_agent(command_settings())
    with agent:
        with working("searching and answering"):
            answer = agent.ask(Turn(**asked))
        return {"answer": answer.to_dict(), "how": how(answer, agent)}


def chat(
    library: LibraryOption = None,
    model: ModelOption = None,
    session: SessionOption = None,
    answer_mode: AnswerOption = None,
    room: RoomOption = None,
) -> None:
    """Talk to the agent; answers stream as they are written. Ctrl-D or /exit ends.

    Example: heron chat --session 0f3a
    """
    from heron.agent import Citations, Final, Token, ToolUsed, Turn
    from heron.agent.how import how
    from heron.wiring.agent import open_agent

    chosen = one_library(library, "chat")
    with working("opening the libraries, tools and models"):
        agent = open_agent(command_settings())
    # A prompt is for a person typing; piped questions get answers alone, as sqlite3 does.
    prompt = "[bold]you>[/] " if sys.stdin.isatty() else ""
    with agent:
        while True:
            try:
                message = console.input(prompt)
            except EOFError:
                break
            if message.strip() in ("/exit", "/quit"):
                break
            if not message.strip():
                continue
            try:
                turn = Turn(
                    message,
                    session_id=session,
                    library=chosen,
                    model=model,
                    answer=answer_mode,  # type: ignore[arg-type]  # the agent checks it
                    room=room,
                )
                for event in agent.stream(turn):
                    if isinstance(event, Token):
                        console.print(event.text, end="", markup=False, highlight=False)
                    elif isinstance(event, ToolUsed):
                        show_tool(event.tool.to_dict())
                    elif isinstance(event, Citations):
                        console.print()
                    elif isinstance(event, Final):
                        show_sources(event.answer.to_dict(), how(event.answer, agent))
                        session = event.answer.session_id
            except HeronError as exc:  # one bad message does not end the conversation
                errors.print(f"error: {exc}", markup=False, highlight=False)
    if session:
        console.print(
            f"[dim]session {session}; continue it with: heron chat --session {session}[/]"
        )


def demo(
    root: Annotated[
        Path | None, typer.Option(help="Workspace the file tools read; default: here.")
    ] = None,
    model: ModelOption = None,
    answer_mode: AnswerOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Index Heron's own docs, then answer four questions with citations and tools.

    The workspace tools are read-only here. With the bundled model the answers are
    quoted from Heron's docs (extractive); --answer generative has the model write them.
    Example: heron demo --root ~/projects/heron
    """
    from heron.agent import Turn
    from heron.agent.how import how
    from heron.cli.progress import progress_bar
    from heron.libraries import index_library
    from heron.libraries.config import DEFAULT_DOCS_NAME, heron_docs
    from heron.wiring.agent import open_agent

    if heron_docs() is None:
        raise InputError(
            "heron demo needs Heron's docs, and this installation has none (a wheel "
            "carries them in heron/_docs, a checkout in docs/): reinstall heron from its "
            "wheel, or run it from a clone of the repository."
        )
    workspace = (root or Path.cwd()).resolve()
    # Generated by the bundled model, long answers drift: the demo keeps them short.
    settings = command_settings()
    tokens = min(settings.agent.max_tokens, DEMO_MAX_TOKENS)
    tools = settings.tools.model_copy(update={"root": workspace})
    agent_settings = settings.agent.model_copy(update={"tool_safety": "read", "max_tokens": tokens})
    with working("opening the libraries, tools and models"):
        agent = open_agent(settings.model_copy(update={"tools": tools, "agent": agent_settings}))
    with agent:
        with progress_bar(f"indexing {DEFAULT_DOCS_NAME}") as tracker:
            report = index_library(
                DEFAULT_DOCS_NAME, agent.store, settings=agent.settings, stages=tracker.stage
            )
        if report.error:
            raise InputError(f"Cannot index Heron's docs: {report.error}")
        if not as_json:
            console.print(
                f"[dim]library {DEFAULT_DOCS_NAME}: {report.pages} pages, "
                f"{report.embedded} embedded; workspace {workspace} (read-only)[/]"
            )
        for question in DEMO_QUESTIONS:
            with working(f"answering: {question}"):
                turn = Turn(question, model=model, answer=answer_mode)  # type: ignore[arg-type]
                answer = agent.ask(turn)
            if as_json:
                print_json({"question": question, **answer.to_dict()})
                continue
            console.print(f"\n[bold]> {question}[/]")
            show(answer.to_dict(), how(answer, agent))


def register_agent(app: typer.Typer) -> None:
    """Add ``ask``, ``chat`` and ``demo`` to the ``heron`` command."""
    app.command("ask")(ask)
    app.command("chat")(chat)
    app.command("demo")(demo)
