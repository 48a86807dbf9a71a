"""Printing helpers shared by the commands: JSON for scripts, rich for people."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from heron.errors import InputError
from heron.store.jsonl import read_queries

console = Console()
errors = Console(stderr=True)


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False))


@contextmanager
def progress_bar(label: str, total: int | None) -> Iterator[Any]:
    """A progress bar on stderr; yields ``advance(n)``. Quiet when stderr is not a terminal."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=errors,
        transient=True,
        disable=not errors.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


#: The ``--queries`` option every search-like command takes.
QueriesOption = Annotated[
    Path | None, typer.Option(help='JSONL of {"id", "text"}: one output line per query.')
]


def query_batch(query: str | None, queries: Path | None) -> list[tuple[str, str]]:
    """``(id, text)`` pairs to run: the one QUERY (id ``""``) or each line of ``--queries``."""
    if (query is None) == (queries is None):
        raise InputError("Give either a QUERY or --queries FILE.jsonl, not both or neither.")
    return [("", query or "")] if queries is None else read_queries(queries)


def print_batch(batch: list[tuple[str, str]], results: Iterable[list[dict[str, Any]]]) -> None:
    """The batch shape of every Heron command: ``{"id": <query id>, "results": [...]}``
    a line, in the order of the queries, results in rank order."""
    for (qid, _), rows in zip(batch, results, strict=True):
        print(json.dumps({"id": qid, "results": rows}, ensure_ascii=False))
