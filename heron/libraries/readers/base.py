"""The reader contract: a file's bytes in, the Markdown Heron chunks out.

A reader is a module with ``read(data: bytes) -> Document``. It turns one file into
Markdown lines (headings as ``#``, tables as pipe tables, lists as ``-``), so the
chunker, search, extractive answers and enrichment work on it as on a Markdown page.
A paged format (PDF, slides) says which page each line is on: ``Document.pages[i]`` is
the page of ``lines[i]`` (1-based), and citations carry it. For example a two-page PDF
whose second page opens a bookmarked section reads as::

    Document(lines=["Install the tool first.", "", "## Setup", "Run setup."],
             pages=[1, 1, 2, 2])

A file that cannot be read (encrypted, corrupt, not what its name says) raises
``Unreadable`` with the reason and what to do; the indexer reports it by name and goes
on with the other files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from heron.errors import HeronError


class Unreadable(HeronError):
    """The file cannot be read as its format: ``str()`` says why and what to do."""


@dataclass
class Document:
    """One file as Markdown. ``pages`` is empty for an unpaged format; ``scanned`` the
    pages that hold an image and no text (a scan: nothing to index without OCR)."""

    lines: list[str]
    pages: list[int] = field(default_factory=list)
    title: str = ""
    scanned: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# What would make a line of plain text into Markdown structure: an ATX heading, a fence,
# a setext underline (it would make the line above a heading), a quote, raw HTML (a
# comment would blank lines until its end), a thematic break.
_STRUCTURE = re.compile(r"^(#|`{3}|~{3}|[=-]+\s*$|>|<|\*\s*\*\s*\*|_\s*_\s*_)")


def plain(line: str) -> str:
    """A line of the document's text that stays text in Markdown: ``"# not a heading"``
    -> ``"\\# not a heading"``. Leading spaces go too (they would make code)."""
    line = line.strip()
    return "\\" + line if _STRUCTURE.match(line) else line


def _cell(value: object) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text.replace("|", "\\|")


#: A table is written in parts of about this many characters, each under its header:
#: a part fits one chunk of the bundled embedder (256 tokens), so no row is cut off from
#: the header that says what its values are.
TABLE_PART_CHARS = 800


def table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """A pipe table, in parts of about ``TABLE_PART_CHARS`` each repeating the header
    (parts separated by a blank line)::

        table(["Name", "Port"], [["web", 80]])
        == ["| Name | Port |", "| --- | --- |", "| web | 80 |"]
    """
    width = max(len(header), *(len(r) for r in rows), 1)
    head = [_cell(h) for h in header] + [""] * (width - len(header))
    top = ["| " + " | ".join(head) + " |", "|" + " --- |" * width]
    out: list[str] = []
    part: list[str] = []
    size = 0
    for row in rows:
        cells = [_cell(c) for c in row] + [""] * (width - len(row))
        line = "| " + " | ".join(cells) + " |"
        if part and size + len(line) > TABLE_PART_CHARS:
            out += [*top, *part, ""]
            part, size = [], 0
        part.append(line)
        size += len(line)
    return out + top + part


def sheet(name: str, rows: Iterable[Sequence[object]]) -> list[str]:
    """A sheet as a section headed ``## name`` (none for ``""``): its first non-empty row
    is the header; empty rows and trailing empty columns dropped."""
    filled = [list(r) for r in rows if any(c not in (None, "") for c in r)]
    if not filled:
        return []
    width = max(i + 1 for row in filled for i, c in enumerate(row) if c not in (None, ""))
    filled = [row[:width] for row in filled]
    heading = [f"## {name}", ""] if name else []
    return [*heading, *table(filled[0], filled[1:]), ""]
