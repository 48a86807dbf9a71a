"""``heron library add-files`` and ``heron library remove-file``: files added to a folder
library and indexed at once, or removed with their records (``heron.libraries.upload``).

The settings, the store and the libraries are imported when a command runs (the CLI's
rule: ``--help`` loads none of them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from heron.cli.output import console, errors, print_json
from heron.cli.settings import command_settings

if TYPE_CHECKING:
    from heron.libraries.upload import NewFile, UploadReport
    from heron.settings import Settings

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _read(path: Path, settings: Settings) -> NewFile:
    """``path`` as a file to add, read to one byte past what a request may carry (the
    upload's bounds then refuse it by name, and a huge file is never read whole)."""
    from heron.errors import InputError
    from heron.libraries.upload import NewFile

    if not path.is_file():
        raise InputError(f"{path} is not a file; name the files to add, e.g. ./manuals/*.pdf")
    with path.open("rb") as handle:
        return NewFile(path.name, handle.read(settings.library.upload_max_bytes + 1))


def add_files_command(
    name: Annotated[str, typer.Argument(help="A folder library, e.g. handbook.")],
    files: Annotated[list[Path], typer.Argument(help="The files to add.")],
    folder: Annotated[
        str, typer.Option(help="The folder of the library they go in, made if missing.")
    ] = "",
    replace: Annotated[
        bool, typer.Option(help="Replace a file of the same name (else it is kept).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Add files to a folder library and index them (only them).

    Each file's content must be of the kind its name says (a PDF, a Word file, Markdown
    ...); one that is not is named with the reason and the others are added.

    Example: heron library add-files handbook ./vpn.md ./onboarding.md --folder guides
    """
    from heron.cli.progress import progress_bar
    from heron.libraries.upload import add_files
    from heron.store import open_store

    settings = command_settings()
    given = [_read(path, settings) for path in files]
    with progress_bar(f"adding to {name}") as tracker:
        report = add_files(
            name,
            given,
            open_store(settings),
            settings,
            under=folder,
            replace=replace,
            stages=tracker.stage,
        )
    if as_json:
        print_json(report.to_dict())
    else:
        _print_added(report)
    if report.refused or (report.index is not None and report.index.error):
        raise typer.Exit(1)


def _print_added(report: UploadReport) -> None:
    # Names and reasons come from the files: printed as they are, no markup.
    for outcome in report.files:
        if outcome.ok:
            verb = "replaced" if outcome.replaced else "added"
            console.print(f"{verb} {outcome.path}", markup=False, highlight=False)
        else:
            errors.print(f"refused {outcome.error}", markup=False, highlight=False)
    index = report.index
    if index is not None and index.error:
        errors.print(f"error: {index.error}", markup=False, highlight=False)
    elif index is not None:
        console.print(
            f"{report.library}: {index.added} added, {index.changed} changed, "
            f"{index.records} records, {index.pages} pages, {index.seconds:.1f} s",
            markup=False,
            highlight=False,
        )
        for skipped in index.skipped:
            errors.print(
                f"  skipped {skipped['path']}: {skipped['reason']}", markup=False, highlight=False
            )


def remove_file_command(
    name: Annotated[str, typer.Argument(help="A folder library, e.g. handbook.")],
    path: Annotated[str, typer.Argument(help="The file's path from the library's folder.")],
    as_json: JsonFlag = False,
) -> None:
    """Delete a page's file from a folder library, and its records from the index.

    Example: heron library remove-file handbook guides/vpn.md
    """
    from heron.libraries.upload import remove_file
    from heron.store import open_store

    settings = command_settings()
    removed = remove_file(name, path, open_store(settings), settings)
    if as_json:
        print_json(removed)
    else:
        console.print(
            f"removed {removed['path']} from {removed['library']} (page {removed['page']})",
            markup=False,
            highlight=False,
        )


def register_library_files(library_app: typer.Typer) -> None:
    """Add ``add-files`` and ``remove-file`` to ``heron library``."""
    library_app.command("add-files")(add_files_command)
    library_app.command("remove-file")(remove_file_command)
