"""Readers: each format a team keeps its documents in, read as the Markdown Heron chunks.

``FORMATS`` is the one table of what a library indexes: Markdown first (its suffixes in
the order that decides which of two same-named files is the page), then PDF, Word, HTML,
PowerPoint, spreadsheets and plain text. ``SUFFIXES`` (every suffix, in that order) is
what ``heron.libraries.scan`` finds; ``read(data, format_of(name))`` turns a file's bytes into a
``Document`` (``heron.libraries.readers.base`` has the contract), importing the format's
module only then, so a missing ``docs`` extra is an ``Unreadable`` naming the install,
not an import error. For example::

    read(pdf_bytes, format_of("manual.pdf")).pages[:3] == [1, 1, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from heron.extras import missing
from heron.libraries.readers.base import Document, Unreadable

#: ``read(data) -> Document``: one format's reader (``heron.libraries.readers.base``).
Reader = Callable[[bytes], Document]


# Each format's module is imported when a file of it is first read: its library (an
# extra's) is then needed, and ``import heron.libraries`` works without any of them.
def _markdown() -> Reader:
    from heron.libraries.readers.text import read_markdown

    return read_markdown


def _plain() -> Reader:
    from heron.libraries.readers.text import read_plain

    return read_plain


def _pdf() -> Reader:
    from heron.libraries.readers.pdf import read as read_pdf

    return read_pdf


def _word() -> Reader:
    from heron.libraries.readers.word import read as read_word

    return read_word


def _html() -> Reader:
    from heron.libraries.readers.htmlpage import read as read_html

    return read_html


def _slides() -> Reader:
    from heron.libraries.readers.slides import read as read_slides

    return read_slides


def _xlsx() -> Reader:
    from heron.libraries.readers.sheets import read_xlsx

    return read_xlsx


def _ocr() -> Callable[[bytes, Document, str], Document]:
    from heron.libraries.readers.ocr import recognise

    return recognise


def _csv() -> Reader:
    from heron.libraries.readers.delimited import read as read_csv

    return read_csv


@dataclass(frozen=True)
class Format:
    name: str
    suffixes: tuple[str, ...]
    #: Imports the format's module and gives its reader.
    load: Callable[[], Reader]
    #: The extra its library comes in (``None``: the standard library's own).
    extra: str | None = None
    #: Markdown as a person writes it: ``heron.libraries.parse`` reads its front matter
    #: and takes its shortcodes and comments out; other formats' Markdown is Heron's own.
    markdown: bool = False
    #: How a link opens the file at a passage: at its ``lines`` (its Markdown's lines are
    #: the file's), its ``page`` (``#page=N``, as PDF viewers read it), its heading's
    #: ``anchor`` (an HTML page's own ids), or only the file (``none``).
    place: Literal["lines", "page", "anchor", "none"] = "none"
    #: A binary package whose size is mostly images and fonts (PDF, Office): limited by
    #: ``HERON_LIBRARY_MAX_DOCUMENT_BYTES``, not by the text pages' limit.
    packaged: bool = False


FORMATS = (
    Format("Markdown", (".md", ".mdx", ".markdown"), _markdown, markdown=True, place="lines"),
    Format("PDF", (".pdf",), _pdf, "docs", place="page", packaged=True),
    Format("Word", (".docx",), _word, "docs", packaged=True),
    Format("HTML", (".html", ".htm", ".xhtml"), _html, "docs", place="anchor"),
    Format("PowerPoint", (".pptx",), _slides, "docs", packaged=True),
    Format("Excel", (".xlsx",), _xlsx, "docs", packaged=True),
    Format("CSV", (".csv",), _csv),
    Format("text", (".txt",), _plain, place="lines"),
)
#: Suffix -> format, lowercase; a file's suffix is matched without regard to case.
READERS = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}
SUFFIXES = tuple(READERS)


def format_of(name: str) -> Format | None:
    """The format of a file ``name`` (``"Guide.PDF"`` is PDF), ``None`` if none reads it."""
    lower = name.lower()
    return next((READERS[s] for s in SUFFIXES if lower.endswith(s) and len(lower) > len(s)), None)


def _reader(fmt: Format) -> Reader:
    try:
        return fmt.load()
    except ImportError as exc:
        if fmt.extra is None:
            raise
        raise Unreadable(f"{fmt.name} files: {missing(fmt.extra)}") from exc


def read(data: bytes, fmt: Format, ocr: str | None = None) -> Document:
    """The file's bytes as a ``Document``; ``Unreadable`` says why they cannot be.
    ``ocr``: tesseract's languages (``eng``) to read a PDF's scanned pages with
    (``heron.libraries.readers.ocr``); ``None``, they stay unread, listed in ``scanned``."""
    reader = _reader(fmt)
    try:
        doc = reader(data)
        return _ocr()(data, doc, ocr) if ocr and doc.scanned else doc
    except Unreadable:
        raise
    except Exception as exc:  # a parser's error on one file, said as such
        # The files come from anyone: a damaged part inside a valid zip, XML a parser
        # chokes on, a PDF object PDFium rejects. Each is that file's failure, reported by
        # its name, never the end of a run over the whole library.
        raise Unreadable(
            f"the {fmt.name} reader failed on it ({type(exc).__name__}: {exc}); the file "
            "is probably damaged: open it and save it again"
        ) from exc


__all__ = [
    "FORMATS",
    "READERS",
    "SUFFIXES",
    "Document",
    "Format",
    "Unreadable",
    "format_of",
    "read",
]
