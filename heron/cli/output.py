"""Printing helpers shared by the commands: JSON for scripts, rich for people."""

from __future__ import annotations

import json
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from heron.errors import InputError
from heron.store.jsonl import read_queries

console = Console()
errors = Console(stderr=True)


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False))


#: Seconds between two progress lines when stderr is not a terminal (a log, a journal).
LINE_EVERY = 5.0


class Tracker(ABC):
    """Where a long command reports how far it is: ``start(stage, total)`` as each stage
    begins (``pages``, then ``chunks``), then ``tracker(n)`` as ``n`` more of its units are
    done. Callable, so it can be passed where a plain ``progress(n)`` is taken."""

    @abstractmethod
    def start(self, stage: str, total: int | None) -> None: ...

    @abstractmethod
    def __call__(self, n: int = 1) -> None: ...

    def stage(self, stage: str, total: int | None) -> Callable[[int], None]:
        """``start`` as a callback that returns the advance of that stage (the shape
        ``index_library(stages=...)`` takes)."""
        self.start(stage, total)
        return self


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")


class BarTracker(Tracker):
    """A rich bar on a terminal: done/total, rate, elapsed and time left."""

    def __init__(self, bar: Progress, label: str) -> None:
        self.bar = bar
        self.label = label
        self.task: Any = None

    def start(self, stage: str, total: int | None) -> None:
        if self.task is not None:
            self.bar.update(self.task, visible=False)
        self.task = self.bar.add_task(f"{self.label}: {stage}", total=total)

    def __call__(self, n: int = 1) -> None:
        if self.task is None:
            self.start("items", None)
        self.bar.advance(self.task, n)


class LineTracker(Tracker):
    """No terminal: one line to ``stream`` at most every ``every`` seconds, and one as each
    stage ends, e.g. ``indexing heron: chunks 512/1,830 (28%), 96.0/s, 14 s left``."""

    def __init__(self, label: str, stream: TextIO, every: float = LINE_EVERY) -> None:
        self.label = label
        self.stream = stream
        self.every = every
        self.stage_name: str | None = None

    def start(self, stage: str, total: int | None) -> None:
        self.finish()
        self.stage_name, self.total, self.done, self.shown = stage, total, 0, -1
        self.started = self.last = time.monotonic()

    def __call__(self, n: int = 1) -> None:
        if self.stage_name is None:
            self.start("items", None)
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self._line(now)

    def finish(self) -> None:
        """The stage's last line, unless the last line said it all."""
        if self.stage_name is not None and self.shown != self.done:
            self._line(time.monotonic())
        self.stage_name = None

    def _line(self, now: float) -> None:
        spent = max(now - self.started, 1e-9)
        rate = self.done / spent
        line = f"{self.label}: {self.stage_name} {self.done:,}"
        if self.total:
            line += f"/{self.total:,} ({100 * self.done / self.total:.0f}%)"
        line += f", {rate:,.1f}/s"
        if self.total and rate > 0 and self.done < self.total:
            line += f", {(self.total - self.done) / rate:,.0f} s left"
        elif self.done:
            line += f", {spent:,.1f} s"
        print(line, file=self.stream, flush=True)
        self.shown = self.done


def bar_columns() -> list[ProgressColumn]:
    """Stage, bar, done/total, rate, time spent, time left."""
    return [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]


@contextmanager
def progress_bar(label: str, total: int | None = None) -> Iterator[Tracker]:
    """Progress on stderr, as a ``Tracker`` (also a plain ``advance(n)``): a bar on a
    terminal, else a line every ``LINE_EVERY`` seconds. ``total`` starts a first stage."""
    if not errors.is_terminal:
        lines = LineTracker(label, sys.stderr)
        if total is not None:
            lines.start("items", total)
        try:
            yield lines
        finally:
            lines.finish()
        return
    with Progress(*bar_columns(), console=errors, transient=True) as bar:
        tracker = BarTracker(bar, label)
        if total is not None:
            tracker.start("items", total)
        yield tracker


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
