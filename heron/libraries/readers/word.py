"""Word (.docx) through python-docx: paragraphs and tables in document order.

python-docx (MIT, on lxml) reads the package's XML as Word wrote it; its
``iter_inner_content`` gives paragraphs and tables in the order they appear, so a table
stays in its section. Heading styles ("Heading 1" ... and "Title") become Markdown
headings, list styles ``-`` items, tables pipe tables under their header row. Word has
no pages in its file (they are laid out when shown), so hits carry their heading.
"""

from __future__ import annotations

import io
import re

import docx
from docx.opc.exceptions import OpcError
from docx.table import Table
from docx.text.paragraph import Paragraph

from heron.libraries.readers.base import Document, Unreadable, plain, table
from heron.libraries.readers.zipped import check_package

_HEADING = re.compile(r"^heading (\d)$", re.IGNORECASE)


def _paragraph(paragraph: Paragraph, doc: Document) -> list[str]:
    text = " ".join(paragraph.text.split())
    if not text:
        return []
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        doc.title = doc.title or text
        return ["", "# " + text, ""]
    if found := _HEADING.match(style):
        return ["", "#" * int(found.group(1)) + " " + text, ""]
    if style.startswith("List"):
        return ["- " + plain(text)]
    return ["", plain(text), ""]


def _table(grid: Table) -> list[str]:
    rows = [[cell.text for cell in row.cells] for row in grid.rows]
    if not rows:
        return []
    return ["", *table(rows[0], rows[1:]), ""]


def read(data: bytes) -> Document:
    check_package(data, "Word")
    try:
        word = docx.Document(io.BytesIO(data))
    except (OpcError, KeyError, ValueError) as exc:
        raise Unreadable(f"not a Word document ({exc}); export it again as .docx") from exc
    doc = Document([], title=" ".join((word.core_properties.title or "").split()))
    for part in word.iter_inner_content():
        doc.lines += _paragraph(part, doc) if isinstance(part, Paragraph) else _table(part)
    return doc
