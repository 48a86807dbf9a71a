"""Printing helpers shared by the commands: JSON for scripts, rich for people.

**Text from data never drives a terminal.** A notice's text, a page's title, a tool's
result or an error message may hold ESC, CSI or a carriage return, which a terminal obeys
(``\x1bc`` resets it; ``\x1b]52;...`` writes the clipboard). Every printer here shows
them escaped, as ``\x1b``: ``shown()`` is the one rule, applied by the consoles to
everything rich prints (their styles, made by rich, still reach the terminal) and by
each plain ``print`` (``say``); ``print_json`` escapes them as JSON does.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
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
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from heron.errors import InputError
from heron.store.jsonl import read_queries

#: The width rich is told when the output is not a terminal: longer than any line.
UNWRAPPED = 1_000_000
#: What a terminal would obey: C0 controls but newline and tab, DEL, C1 controls (CSI
#: is U+009B), and the bidirectional overrides that reorder what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Those a JSON encoder leaves as they are (it escapes C0 itself).
_JSON_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str) -> str:
    r"""``text`` with every control character written out (ESC as ``\x1b``): safe to
    print to a terminal. Newlines and tabs stay.

    >>> print(shown("deploy \x1b[2Jdone\r"))
    deploy \x1b[2Jdone\x0d
    """
    return _CONTROL.sub(_escaped, text)


def say(*values: object, file: TextIO | None = None, end: str = "\n") -> None:
    """``print`` for text that may come from data: each value ``shown()``."""
    print(*(shown(str(v)) for v in values), file=file, end=end, flush=True)


class HeronConsole(Console):
    """A rich console that wraps only on a terminal.

    Not a terminal (a pipe, a file, a test's capture) and no ``width`` set in code: a
    line is as long as its content and a table as wide as its cells, as if the screen
    had no edge. Rich would otherwise wrap at ``$COLUMNS``, at the size of a terminal it
    finds on another stream, or at 80 columns: ``heron search | grep`` would miss a
    citation broken in two. ``$COLUMNS`` describes a terminal, so a pipe ignores it."""

    def __init__(self, *args: Any, width: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, width=width, **kwargs)
        self._guessed_width = self._width if width is None else None  # from $COLUMNS

    def _unbounded(self) -> bool:
        return not self.is_terminal and self._width == self._guessed_width

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)
        return ConsoleDimensions(UNWRAPPED, size.height) if self._unbounded() else size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)

    def render_str(self, text: str, **options: Any) -> Text:
        # Before layout, so a table is as wide as what it shows.
        return super().render_str(shown(text), **options)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Every segment's text, however it was made (Text, a table cell, markup), is
        # shown escaped; rich's own control segments (cursor moves) and styles are not
        # text and pass.
        return super()._render_buffer(
            Segment(text if control else shown(text), style, control)
            for text, style, control in buffer
        )


console = HeronConsole()
errors = HeronConsole(stderr=True)


def table(*columns: str, **options: Any) -> Table:
    """A rich table whose cells are never cut: a value too long for its column on a
    terminal folds onto the next line (rich's default would end it in "…"); off a
    terminal the columns are as wide as their longest value."""
    grid = Table(**options)
    for column in columns:
        grid.add_column(column, overflow="fold")
    return grid


def print_json(value: Any) -> None:
    """One JSON line; C1 and bidi controls written as ``\\u`` escapes (valid JSON)."""
    text = json.dumps(value, ensure_ascii=False)
    print(_JSON_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


#: Seconds between two progress lines when stderr is not a terminal (a log, a journal).
LINE_EVERY = 5.0
#: A stage still running this many seconds after it began says so, even before any of
#: its units is done: a long command says what it does within a second.
FIRST_LINE = 1.0


class Tracker(ABC):
    """Where a long command reports how far it is: ``start(stage, total)`` as each stage
    begins (``pages``, then ``chunks``; ``total`` None when unknown), then ``tracker(n)``
    as ``n`` more of its units are done. Callable, so it can be passed where a plain
    ``progress(n)`` is taken."""

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
    """No terminal: lines on ``stream``, e.g. ``indexing heron: chunks 512/1,830 (28%),
    96.0/s, 14 s left``. A stage's first line comes ``first`` seconds after it began if
    it is still running, the next ones at most every ``every`` seconds, and a last one
    as it ends; a stage that did nothing and said nothing stays silent.

    Lines are written as units are done; ``tick()`` writes one that is due although
    nothing moved (a model still loading, one long batch), and ``ticking()`` calls it
    from a thread while a command runs."""

    def __init__(
        self, label: str, stream: TextIO, every: float = LINE_EVERY, first: float = FIRST_LINE
    ) -> None:
        self.label = label
        self.stream = stream
        self.every = every
        self.first = first
        self.stage_name: str | None = None
        self.lock = threading.RLock()  # the ticking thread and the command both write

    def start(self, stage: str, total: int | None) -> None:
        with self.lock:
            self.finish()
            self.stage_name, self.total, self.done, self.shown = stage, total, 0, 0
            self.said = False  # anything written for this stage yet
            self.started = self.last = time.monotonic()

    def __call__(self, n: int = 1) -> None:
        with self.lock:
            if self.stage_name is None:
                self.start("items", None)
            self.done += n
            self._line_if_due()

    def tick(self) -> None:
        """Write the line that is due, if one is, whether or not anything was done."""
        with self.lock:
            if self.stage_name is not None:
                self._line_if_due()

    def finish(self) -> None:
        """The stage's last line, unless the last line said it all."""
        with self.lock:
            if self.stage_name is not None and self.done != self.shown:
                self._line(time.monotonic())
            self.stage_name = None

    @contextmanager
    def ticking(self, interval: float = 0.25) -> Iterator[LineTracker]:
        """``tick()`` every ``interval`` seconds from a thread until the block ends, then
        ``finish()``."""
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(interval):
                self.tick()

        thread = threading.Thread(target=run, name="heron-progress", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            self.finish()

    def _line_if_due(self) -> None:
        now = time.monotonic()
        if now - self.last >= (self.every if self.said else self.first):
            self._line(now)  # also when nothing moved: the stage still runs

    def _line(self, now: float) -> None:
        spent = max(now - self.started, 1e-9)
        rate = self.done / spent
        line = f"{self.label}: {self.stage_name}"
        if self.done or self.total is not None:
            line += f" {self.done:,}"
        if self.total:
            line += f"/{self.total:,} ({100 * self.done / self.total:.0f}%)"
        if self.done:
            line += f", {rate:,.1f}/s"
        if self.total and rate > 0 and self.done < self.total:
            line += f", {(self.total - self.done) / rate:,.0f} s left"
        else:
            line += f", {spent:,.1f} s"
        say(line, file=self.stream)
        self.shown, self.said, self.last = self.done, True, now


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
    terminal, else lines (see ``LineTracker``). The first stage is ``items`` of
    ``total``, or ``starting`` until the command starts its own."""
    first = "items" if total is not None else "starting"
    if not errors.is_terminal:
        lines = LineTracker(label, sys.stderr)
        lines.start(first, total)
        with lines.ticking():
            yield lines
        return
    with Progress(*bar_columns(), console=errors, transient=True) as bar:
        tracker = BarTracker(bar, label)
        tracker.start(first, total)
        yield tracker


@contextmanager
def working(doing: str) -> Iterator[None]:
    """Say on stderr what a long step does, as it begins: a spinner on a terminal
    (gone when the step ends), else one line, ``doing ...``. stdout stays the command's
    output (``--json`` included).

    Example: ``with working("loading the models"): agent = open_agent()``
    """
    if errors.is_terminal:
        with errors.status(escape(doing)):
            yield
        return
    say(f"{doing} ...", file=sys.stderr)
    yield


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
        print_json({"id": qid, "results": rows})
