"""Printing helpers shared by the commands: JSON for scripts, rich for people."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

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
