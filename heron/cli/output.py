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
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from heron.errors import InputError

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


class _StderrNotes(logging.Handler):
    """A log record as one line on the stderr of the moment (a test's runner swaps
    ``sys.stderr`` for each command it runs)."""

    def emit(self, record: logging.LogRecord) -> None:
        say(f"heron: {self.format(record)}", file=sys.stderr)


def show_model_notes() -> None:
    """Show the embedders' notes on stderr, their info included: a first run builds a
    model's int8 graph once (seconds with nothing else to show), and says so."""
    logger = logging.getLogger("heron.embed")
    if not any(isinstance(h, _StderrNotes) for h in logger.handlers):
        logger.addHandler(_StderrNotes())
    logger.setLevel(logging.INFO)


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


@contextmanager
def working(doing: str) -> Iterator[None]:
    """Say on stderr what a long step does, as it begins: a spinner on a terminal
    (gone when the step ends), else one line, ``doing ...``. stdout stays the command's
    output (``--json`` included).

    Example: ``with working("loading the models"): agent = open_agent(command_settings())``
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
    if queries is None:
        return [("", query or "")]
    # Imported here, when a file is read: heron.store loads numpy and the settings, which
    # one QUERY through a running server does not need (heron.cli's docstring).
    from heron.store.jsonl import read_queries

    return read_queries(queries)


def print_batch(batch: list[tuple[str, str]], results: Iterable[list[dict[str, Any]]]) -> None:
    """The batch shape of every Heron command: ``{"id": <query id>, "results": [...]}``
    a line, in the order of the queries, results in rank order."""
    for (qid, _), rows in zip(batch, results, strict=True):
        print_json({"id": qid, "results": rows})
