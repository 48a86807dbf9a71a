"""``heron library``, ``heron index`` and ``heron search``: documentation libraries.

Each command imports the settings, the store and the libraries when it runs (the rule in
``heron.cli``'s docstring): ``heron search --help`` loads none of them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape

from heron.cli import remote
from heron.cli.output import QueriesOption, console, errors, print_batch, print_json, query_batch
from heron.cli.settings import command_settings

if TYPE_CHECKING:
    from heron.libraries import LibraryIndexReport
    from heron.libraries.index import IndexInterrupted

library_app = typer.Typer(help="Configure documentation libraries.", no_args_is_help=True)
#: ``heron.libraries.MODES``, written out so that --help need not import the libraries
#: (tests/cli/test_startup.py checks they agree).
SEARCH_MODES = ("full", "hybrid", "dense", "lexical")
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def page_label(pages: list[int] | None) -> str:
    """A document's pages as a reader cites them: ``[12, 12]`` -> ``"p. 12"``, ``[12, 13]``
    -> ``"pp. 12-13"``; ``""`` for none (a format without pages)."""
    if not pages:
        return ""
    first, last = pages
    return f"p. {first}" if first == last else f"pp. {first}-{last}"


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "never"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


@library_app.command("add")
def library_add(
    name: Annotated[str, typer.Argument(help="Library name, e.g. kubernetes.")],
    source: Annotated[str, typer.Argument(help="A git URL or a local folder.")],
    branch: Annotated[
        str | None, typer.Option(help="A git library's branch or tag (default: the remote's).")
    ] = None,
    include: Annotated[
        list[str] | None, typer.Option(help="Index only pages matching this glob; repeatable.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(help="Skip pages matching this glob; repeatable.")
    ] = None,
    enrich: Annotated[
        bool,
        typer.Option(help="Ask the model for each changed page's questions at every index."),
    ] = False,
    collections: Annotated[
        str | None,
        typer.Option(help="The folder whose sub-folders are collections (default: collections)."),
    ] = None,
    language: Annotated[
        str,
        typer.Option(
            help="The pages' language for lexical search: auto (each page's own, detected) "
            "or a code: pt, es, en ... for every page."
        ),
    ] = "auto",
    as_json: JsonFlag = False,
) -> None:
    """Add a library to libraries.txt; index it next with heron index NAME.

    Example: heron library add kubernetes https://github.com/kubernetes/website.git
    --include 'content/en/docs/**'
    """
    from heron.libraries import add_library

    library = add_library(
        name,
        source,
        command_settings(),
        branch=branch,
        include=include or (),
        exclude=exclude or (),
        enrich=enrich,
        collections=collections,
        language=language,
    )
    if as_json:
        print_json(library.to_dict())
    else:
        options = f" {library.options()}" if library.options() else ""
        console.print(
            f"added {library.name} ({library.source}{options}); now run: heron index {name}",
            markup=False,
            highlight=False,
        )


@library_app.command("remove")
def library_remove(
    name: Annotated[str, typer.Argument(help="Library to remove.")],
    as_json: JsonFlag = False,
) -> None:
    """Remove a library: its line in libraries.txt, its index and its git checkout.

    Example: heron library remove kubernetes
    """
    from heron.libraries.library import forget_library
    from heron.store import open_store

    settings = command_settings()
    library = forget_library(name, open_store(settings), settings)
    if as_json:
        print_json({"name": library.name, "removed": True})
    else:
        console.print(f"removed {library.name}")


@library_app.command("list")
def library_list(as_json: JsonFlag = False) -> None:
    """List the configured libraries and their sources.

    Example: heron library list --json
    """
    from heron.libraries import read_libraries

    libraries = read_libraries(command_settings())
    if as_json:
        print_json([x.to_dict() for x in libraries])
        return
    for lib in libraries:
        words = [lib.name, lib.source, lib.options(), "(built in)" if lib.builtin else ""]
        console.print("  ".join(w for w in words if w), markup=False, highlight=False)


@library_app.command("status")
def library_status(
    name: Annotated[str | None, typer.Argument(help="One library; default: all.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show each library's pages, chunks, last sync, errors and skipped files.

    The files its last index skipped or warned of are named with the reason.

    Example: heron library status kubernetes
    """
    from heron.libraries.library import statuses
    from heron.store import open_store

    settings = command_settings()
    found = statuses(open_store(settings), settings, name)
    if as_json:
        print_json([s.to_dict() for s in found])
        return
    for s in found:
        console.print(
            f"[bold]{s.name}[/] ({s.kind}) {s.pages} pages, {s.chunks} chunks, "
            f"{s.questions} questions; last sync {_when(s.last_sync)}"
        )
        if s.last_error:
            console.print(f"  [red]last error[/] {_when(s.last_error_at)}: {s.last_error}")
        if s.incomplete:
            console.print(f"  [yellow]incomplete[/]: {escape(s.incomplete)}")
        if s.outdated:
            console.print(f"  [yellow]outdated[/]: {escape(s.outdated)}")
        # Paths and reasons come from the library's files: printed as they are, no markup.
        for skipped in s.skipped:
            console.print(
                f"  skipped {skipped['path']}: {skipped['reason']}", markup=False, highlight=False
            )
        for warning in s.warnings:
            console.print(f"  warning {warning}", markup=False, highlight=False)
        for scan in s.scanned:
            console.print(f"  {_scanned(scan)}", markup=False, highlight=False)


def _scanned(scan: dict[str, Any]) -> str:
    """A document's pages with no text layer, named: what ``status`` and ``index`` say."""
    pages = ", ".join(map(str, scan["pages"]))
    return (
        f"scanned {scan['path']}: pages {pages} have no text layer (an image only), so "
        "nothing on them is searchable; read them with HERON_LIBRARY_OCR=true (Debian's "
        "tesseract), or add a copy with text"
    )


def index(
    name: Annotated[str | None, typer.Argument(help="One library; default: all.")] = None,
    enrich: Annotated[
        bool | None,
        typer.Option(
            "--enrich/--no-enrich",
            help="Ask the model (HERON_LIBRARY_ENRICH_MODEL) for the questions of each page "
            "without a current Q&A cache; default: each library's enrich= option.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Sync and index libraries; only changed pages are re-chunked and re-embedded.

    Example: heron index kubernetes --enrich
    """
    from heron.cli.progress import progress_bar
    from heron.libraries import index_library, read_libraries
    from heron.libraries.index import IndexInterrupted
    from heron.store import open_store

    settings = command_settings()
    store = open_store(settings)
    configured = read_libraries(settings)
    names = [name] if name else [lib.name for lib in configured]
    wanted = any(lib.enrich for lib in configured if lib.name in names)
    asking = wanted if enrich is None else enrich
    reports = []
    with contextlib.ExitStack() as stack:
        enricher = None
        if asking:  # no models.yml is read unless a page may be asked
            # Imported here: the agent and the broker cost 0.6 s to import, more than a
            # one-page re-index without them.
            from heron.llm import load_broker
            from heron.wiring.enrich import library_enricher

            broker = stack.enter_context(contextlib.closing(load_broker(settings)))
            enricher = library_enricher(settings, broker)
        for position, library in enumerate(names):
            try:
                with progress_bar(f"indexing {library}") as tracker:  # pages, then chunks
                    report = index_library(
                        library,
                        store,
                        settings=settings,
                        enricher=enricher,
                        enrich=enrich,
                        stages=tracker.stage,
                    )
            except IndexInterrupted as stopped:
                _interrupted(stopped, names[position + 1 :], reports, as_json)
            reports.append(report)
            if not as_json:
                _print_report(report)
    if as_json:
        print_json([r.to_dict() for r in reports])
    if any(r.error for r in reports):
        raise typer.Exit(1)


def _interrupted(
    stopped: IndexInterrupted, later: list[str], reports: list[LibraryIndexReport], as_json: bool
) -> NoReturn:
    """Ctrl-C: say what was kept and how to finish, and exit 130 as a shell's Ctrl-C does."""
    if as_json:  # the libraries finished before it
        print_json([r.to_dict() for r in reports])
    errors.print(f"interrupted: {stopped}", markup=False, highlight=False)
    if later:
        errors.print(
            f"not indexed yet: {', '.join(later)}; heron index (no name) indexes every library",
            markup=False,
            highlight=False,
        )
    raise typer.Exit(130)


def _print_report(report: LibraryIndexReport) -> None:
    if report.error:
        errors.print(f"[red]error[/]: {report.error}")
        return
    asked = f", {report.model_calls} model calls" if report.model_calls else ""
    console.print(
        f"{report.library}: {report.pages} pages ({report.added} added, {report.changed} "
        f"changed, {report.removed} removed, {report.unchanged} unchanged), "
        f"{report.records} records, {report.questions} questions{asked}, "
        f"{report.embedded} embedded, {report.seconds:.1f} s"
    )
    # Paths and reasons come from the library's files (and name extras, heron[docs]):
    # printed as they are, no markup.
    for skipped in report.skipped:
        errors.print(
            f"  skipped {skipped['path']}: {skipped['reason']}", markup=False, highlight=False
        )
    for warning in report.warnings:
        errors.print(f"  warning {warning}", markup=False, highlight=False)
    for scan in report.scanned:
        errors.print(f"  {_scanned(scan)}", markup=False, highlight=False)
    for failed in report.enrich_errors:
        errors.print(f"  [yellow]no questions[/] for {failed['page']}: {failed['error']}")
    if report.stale_caches:
        errors.print(
            f"  {report.stale_caches} pages have a Q&A cache for an older text, left out; "
            f"regenerate them with: heron index {report.library} --enrich"
        )


def search(
    query: Annotated[str | None, typer.Argument(help="The question or keywords.")] = None,
    queries: QueriesOption = None,
    library: Annotated[
        list[str] | None,
        typer.Option(help="Only this library; repeat it to search several together."),
    ] = None,
    collection: Annotated[str | None, typer.Option(help="Only this collection.")] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Pages per query.")] = 10,
    mode: Annotated[str, typer.Option(help=f"One of: {', '.join(SEARCH_MODES)}.")] = "full",
    as_json: JsonFlag = False,
) -> None:
    """Find the pages and sections that answer a question, with citations.

    Example: heron search "why do my service ports keep changing" --library kubernetes -k 3
    """
    batch = query_batch(query, queries)
    asked = {
        "queries": [text for _, text in batch],
        "library": library,
        "collection": collection,
        "top_k": top_k,
        "mode": mode,  # checked by search_many against MODES
    }
    report = remote.call("search", "search.batch", asked)
    if report is None:  # no server of this home, or it failed: searched here
        report = _search_here(asked)
    if queries is not None:
        rows = ([{"id": r["chunk"], **r} for r in found] for found in report["results"])
        print_batch(batch, rows)
        return
    found = report["results"][0]
    if as_json:
        print_json(found)
        return
    if not found:
        console.print("no results")
    for rank, r in enumerate(found, 1):
        where = f" > {r['heading']}" if r["heading"] else ""
        at = f" {page_label(r['pages'])}" if r.get("pages") else ""
        console.print(
            f"{rank:>3}. [bold]{r['title']}[/]{where}  {r['citation']}{at}  {r['score']:.3f}"
        )
        console.print(f"     {r['snippet']}", markup=False, highlight=False)
        console.print(f"     {r['source']}", style="dim", markup=False, highlight=False)
        for copy in r["also_in"]:  # the same page in another library
            console.print(f"     also {copy['citation']}", style="dim", markup=False)
    reading = found[0].get("english_query") if found else None
    also = f", and in English as: {reading}" if reading else ""
    console.print(f"searched {', '.join(report['searched'])}{also}", style="dim", markup=False)
    for note in report["notes"]:  # each result carries its own too (Result.note): said once here
        errors.print(f"warning: {note}", markup=False, highlight=False)


def _search_here(asked: dict[str, Any]) -> dict[str, Any]:
    """What the server's ``search.batch`` answers (``heron.server.features.local``),
    computed here."""
    from heron.libraries.batch import search_report
    from heron.store import open_store

    settings = command_settings()
    options = {name: value for name, value in asked.items() if name != "queries"}
    return search_report(asked["queries"], open_store(settings), settings=settings, **options)


def register_libraries(app: typer.Typer) -> None:
    """Add ``library``, ``index`` and ``search`` to the ``heron`` command."""
    app.add_typer(library_app, name="library")
    app.command("index")(index)
    app.command("search")(search)
