"""Progress on stderr for long commands: a rich bar on a terminal, lines elsewhere.

A module of its own: rich's progress bar costs a tenth of a second to import, which
the commands that show none (``--version``, ``--help``, ``search``) do not pay.
"""

from __future__ import annotations

import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

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

from heron.cli.output import errors, say

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
