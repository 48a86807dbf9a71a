"""PowerPoint (.pptx) through python-pptx: a slide is a page.

python-pptx (MIT, on lxml) gives each slide's shapes with their text frames, tables and
groups, and the speaker notes. A slide reads as a section headed by its title (or
"Slide N"), its text as paragraphs (indented levels as ``-`` items), its tables as pipe
tables, its notes last; every line is on its slide's page, so a hit cites the slide.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import pptx
from pptx.exc import PackageNotFoundError
from pptx.shapes.base import BaseShape
from pptx.shapes.group import GroupShape

from heron.libraries.readers.base import Document, Unreadable, plain, table
from heron.libraries.readers.zipped import check_package


def _shapes(shapes: Iterable[BaseShape]) -> Iterable[BaseShape]:
    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _text(shape: BaseShape) -> list[str]:
    if getattr(shape, "has_table", False):
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]  # type: ignore[attr-defined]
        return ["", *table(rows[0], rows[1:]), ""] if rows else []
    if not getattr(shape, "has_text_frame", False):
        return []
    out: list[str] = []
    for para in shape.text_frame.paragraphs:  # type: ignore[attr-defined]
        text = " ".join(para.text.split())
        if text:
            out.append("  " * (para.level - 1) + "- " + plain(text) if para.level else plain(text))
    return ["", *out, ""] if out else []


def read(data: bytes) -> Document:
    check_package(data, "PowerPoint")
    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise Unreadable(f"not a PowerPoint file ({exc}); export it again as .pptx") from exc
    doc = Document([], [], title=" ".join((deck.core_properties.title or "").split()))
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text.split()) if title_shape is not None else ""
        lines = ["## " + (title or f"Slide {number}")]
        title_id = title_shape.shape_id if title_shape is not None else None
        for shape in _shapes(slide.shapes):
            if shape.shape_id != title_id:
                lines += _text(shape)
        if slide.has_notes_slide:
            notes = " ".join(slide.notes_slide.notes_text_frame.text.split())
            lines += ["", plain("Notes: " + notes), ""] if notes else []
        lines.append("")
        doc.lines += lines
        doc.pages += [number] * len(lines)
    return doc
