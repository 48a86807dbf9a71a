"""PDF through pypdfium2 (PDFium, Chrome's PDF engine): the text layer, page by page.

Chosen over pypdf on Debian's own manuals (auto-multiple-choice.en.pdf, 101 pages): 0.13 s
against 1.95 s, and words kept apart where pypdf ran them together ("Use in mathematics"
against "Useinmathematics"); Apache-2.0/BSD, one wheel with PDFium inside, nothing to
compile. The bookmarks (the PDF's outline) become headings on the line of their page
that prints them (else at its top), so a hit carries its page and its section. A page
with an image and no text is a scan: listed in ``Document.scanned`` (nothing of it is
indexed without OCR).

Two things a printed page adds that a Markdown page lacks are undone here. Running
headers and footers ("Debian Reference 97 / 233", a bare page number) are dropped: on
every page they are words of no passage, shared by all, and a chunk that straddles a page
turn carried one in its middle. A PDF without bookmarks (LaTeX without hyperref, many
exports) gets its headings from type size, as a reader sees them: a line set larger than
the body text is a heading, the larger the higher; without them a hit had no section
to name and its chunks none to rank by.
"""

from __future__ import annotations

import ctypes
import itertools
import re
from collections import Counter, defaultdict
from statistics import median
from typing import NamedTuple

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from heron.libraries.readers.base import Document, Unreadable, plain

#: Outline levels deeper than this are Markdown's deepest heading.
_DEEPEST = 6
#: Filled lines at each end of a page where running headers and footers are looked for
#: (a title and a page number may be two lines).
_EDGE = 2
#: A line at a page's edge is running when its form (``_form``: digits as ``#``, so page
#: numbers agree) is at an edge of at least this share of the pages with text, and of
#: ``_RUNNING_PAGES`` at least: a header is on every page, a heading or a note at a page
#: top on few. A header that alternates by chapter is on fewer, and stays.
_RUNNING_SHARE = 0.5
_RUNNING_PAGES = 3
#: Type this much larger than the body text's is a heading: LaTeX's \subsection is set
#: at 12 pt over a 10.95 pt body (1.096), its \section at 14.4 pt.
_HEADING_RATIO = 1.08
#: A heading is a few short lines; more, or longer, is text set large (a cover, a callout).
_HEADING_LINES = 3
_HEADING_CHARS = 150
_LINE_BREAK = re.compile(r"\r\n|\n")
_DIGITS = re.compile(r"\d+")
_LETTERS = re.compile(r"[^\W\d_]")

#: A line further below the one before than this many times the page's usual line pitch
#: starts a paragraph (most layouts put space between paragraphs: 18 pt over 12 in the
#: DocBook manuals measured, 24 over 13.5 around LaTeX's displays).
_PARAGRAPH_GAP = 1.3
#: A line that ends this share of the text width short of the page's right margin ends its
#: paragraph (LaTeX indents the next one instead of spacing it).
_SHORT_LINE = 0.15


class _Line(NamedTuple):
    """A line of a page: its text (``plain``), its type size in points (the median of its
    characters'; 0.0 where not measured), where it starts and ends across the page and its
    baseline's height (points from the bottom; all 0.0 for a line of spaces)."""

    text: str
    size: float = 0.0
    left: float = 0.0
    right: float = 0.0
    base: float = 0.0


def _outline(pdf: pdfium.PdfDocument) -> dict[int, list[tuple[int, str]]]:
    """``(level, title)`` per page (0-based) of the bookmarks that point into the file."""
    by_page: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for mark in pdf.get_toc(max_depth=_DEEPEST):
        dest = mark.get_dest()
        index = dest.get_index() if dest is not None else None
        title = " ".join((mark.get_title() or "").split())
        if index is not None and title:
            by_page[index].append((min(mark.level + 1, _DEEPEST), title))
    return by_page


def _place(body: list[str], marks: list[tuple[int, str]]) -> list[str]:
    """The page's lines with its bookmarks as headings: on the line that prints the
    title ("5.4.9 Layout" for the bookmark "Layout"), else at the top of the page, so
    the text above a section that starts mid-page stays in the section before."""
    out = list(body)
    top: list[str] = []
    after = 0
    for level, title in marks:
        heading = "#" * level + " " + title
        wanted = title.casefold()
        found = next(
            (
                i
                for i in range(after, len(out))
                if out[i] and " ".join(out[i].split()).casefold().endswith(wanted)
            ),
            None,
        )
        if found is None:
            top.append(heading)
        else:
            out[found], after = heading, found + 1
    return top + out


def _lines(textpage: pdfium.PdfTextPage, measure: bool) -> list[_Line]:
    """The page's text lines, where they lie; with ``measure`` each with its type size
    (PDFium's size of each character, whose index is its place in the page's text)."""
    text = textpage.get_text_range()
    # A character outside the BMP is one PDFium character and two code units of the
    # text: the indexes part, so such a page is read as lines alone (one block).
    if len(text) != textpage.count_chars():
        return [_Line(plain(line)) for line in _LINE_BREAK.split(text)]
    lines: list[_Line] = []
    start = 0
    for end, after in [*((m.start(), m.end()) for m in _LINE_BREAK.finditer(text)), (len(text), 0)]:
        shown = [i for i in range(start, end) if not text[i].isspace()]
        line = _Line(plain(text[start:end]))
        if shown:
            x, y = ctypes.c_double(), ctypes.c_double()
            pdfium_c.FPDFText_GetCharOrigin(textpage.raw, shown[0], x, y)
            size = (
                median(pdfium_c.FPDFText_GetFontSize(textpage.raw, i) for i in shown)
                if measure
                else 0.0
            )
            line = line._replace(
                size=size, left=x.value, right=textpage.get_charbox(shown[-1])[2], base=y.value
            )
        lines.append(line)
        start = after
    return lines


def _paragraphs(lines: list[_Line]) -> list[str]:
    """The page's lines with a blank line where a paragraph ends, as Markdown has them: so
    a chunk ends with a paragraph, not mid-sentence at whatever line filled it."""
    shown = [line for line in lines if line.text and line.right]
    pitches = [a.base - b.base for a, b in itertools.pairwise(shown) if a.base > b.base]
    if not pitches:
        return [line.text for line in lines]
    pitch = median(pitches)
    margin = max(line.right for line in shown)
    width = margin - min(line.left for line in shown)
    out: list[str] = []
    previous: _Line | None = None
    for line in lines:
        starts = (
            previous is not None
            and bool(line.text and line.right and out[-1])
            and (
                previous.base - line.base > _PARAGRAPH_GAP * pitch
                or margin - previous.right > _SHORT_LINE * width
            )
        )
        if starts:
            out.append("")
        out.append(line.text)
        previous = line if line.text else previous
    return out


def _form(text: str) -> str:
    """What a running line keeps from page to page: ``"Manual 12 / 90"`` -> ``"manual # / #"``."""
    return _DIGITS.sub("#", " ".join(text.split()).casefold())


def _edges(lines: list[_Line]) -> set[int]:
    filled = [i for i, line in enumerate(lines) if line.text]
    return {*filled[:_EDGE], *filled[-_EDGE:]}


def _unframed(pages: list[list[_Line]]) -> list[list[_Line]]:
    """The pages without their running headers and footers: the lines at a page's top or
    bottom whose form is at the top or bottom of most pages."""
    edges = [_edges(lines) for lines in pages]
    seen = Counter(
        form
        for lines, ends in zip(pages, edges, strict=True)
        for form in {_form(lines[i].text) for i in ends}
    )
    least = max(_RUNNING_PAGES, _RUNNING_SHARE * sum(1 for ends in edges if ends))
    running = {form for form, count in seen.items() if count >= least}
    return [
        [line for i, line in enumerate(lines) if i not in ends or _form(line.text) not in running]
        for lines, ends in zip(pages, edges, strict=True)
    ]


def _rounded(size: float) -> float:
    return round(size * 2) / 2  # to half a point: one style's sizes vary in the decimals


def _levels(pages: list[list[_Line]]) -> dict[float, int]:
    """Heading level by type size: the sizes above the body text's (the size most of the
    text is set in), largest first, as ``#`` to ``######``."""
    weight: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            if line.size:
                weight[_rounded(line.size)] += len(line.text)
    if not weight:
        return {}
    body = weight.most_common(1)[0][0]
    larger = sorted((s for s in weight if s >= body * _HEADING_RATIO), reverse=True)
    return {size: min(level, _DEEPEST) for level, size in enumerate(larger, start=1)}


def _sized(lines: list[_Line], levels: dict[float, int]) -> list[_Line]:
    """The page's lines with each run of lines set in a heading's size (a heading that
    wraps) made one heading; a longer run is text set large and stays text."""
    out: list[_Line] = []
    i = 0
    while i < len(lines):
        first = lines[i]
        level = levels.get(_rounded(first.size)) if _LETTERS.search(first.text) else None
        j = i + 1
        while (
            level
            and j < len(lines)
            and lines[j].text
            and _rounded(lines[j].size) == _rounded(first.size)
        ):
            j += 1
        title = " ".join(line.text for line in lines[i:j])
        if level and j - i <= _HEADING_LINES and len(title) <= _HEADING_CHARS:
            out.append(lines[j - 1]._replace(text="#" * level + " " + title))
        else:  # the whole run: its tail alone would be short enough to pass for one
            out += lines[i:j]
        i = j
    return out


def _scanned(page: pdfium.PdfPage) -> bool:
    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))


def read(data: bytes) -> Document:
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise Unreadable(
                "encrypted: the PDF needs a password to open; save a copy without one "
                "(Print to PDF, or qpdf --decrypt) and add that"
            ) from exc
        raise Unreadable(
            f"not a readable PDF ({exc}); the file is damaged or is not a PDF: export it again"
        ) from exc
    try:
        doc = Document([], [], title=" ".join((pdf.get_metadata_dict().get("Title") or "").split()))
        headings = _outline(pdf)
        pages = []
        for index in range(len(pdf)):
            page = pdf[index]
            # Sizes are measured only where there are no bookmarks to give the headings.
            lines = _lines(page.get_textpage(), measure=not headings)
            if not any(line.text for line in lines) and _scanned(page):
                doc.scanned.append(index + 1)
            pages.append(lines)
        levels = {} if headings else _levels(pages)
        for index, lines in enumerate(_unframed(pages)):
            body = _paragraphs(_sized(lines, levels))
            if headings:
                body = _place(body, headings.get(index, []))
            # A blank line between pages: a page is at least one block, so a chunk rarely
            # spans two and its citation names the page it came from.
            doc.lines += [*body, ""]
            doc.pages += [index + 1] * (len(body) + 1)
        return doc
    finally:
        pdf.close()
