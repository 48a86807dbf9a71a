"""Small documents of every format a library reads, made here by each format's own
writer (python-docx, python-pptx, openpyxl, pypdf) so the tests need no binary files.

A PDF's pages are written as a minimal PDF by hand (one Helvetica text object per line,
as any PDF writer emits them) and then given to pypdf, which adds the outline and, for
``password=``, encrypts it as Acrobat would (AES-256).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence

import docx
import openpyxl
import pptx
import pypdf
from PIL import Image, ImageDraw, ImageFont
from pptx.util import Inches

#: A page that is an image: ``(width, height, gray pixels)``, one byte a pixel.
Scan = tuple[int, int, bytes]
#: A line of a PDF page: its text, set in 12 pt, or ``(text, points)``; ``""`` leaves a
#: line's space empty (between paragraphs).
Line = str | tuple[str, int]


def scan_of(text: str) -> Scan:
    """``text`` drawn large and black on white, as a scanner would give it (Pillow draws
    it: it comes with python-pptx)."""
    picture = Image.new("L", (1700, 400), 255)
    font = ImageFont.load_default(size=64)
    ImageDraw.Draw(picture).text((80, 150), text, fill=0, font=font)
    return picture.width, picture.height, picture.tobytes()


def _image(width: int, height: int, pixels: bytes) -> bytes:
    data = zlib.compress(pixels)
    return (
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
        % (width, height, len(data))
        + data
        + b"\nendstream"
    )


def _pdf_objects(pages: Sequence[Sequence[Line] | Scan | None]) -> bytes:
    """A PDF of ``pages``: each a list of text lines, ``None`` for a page holding one
    grey image and no text (a scan of nothing), or a ``Scan`` (a scan of it)."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    grey = add(_image(64, 64, bytes([128]) * 64 * 64))
    kids = []
    for lines in pages:
        image = grey
        if isinstance(lines, tuple):  # a scanned text: its own image, the page's width
            image = add(_image(*lines))
            content = b"q 540 0 0 %d 36 400 cm /Im1 Do Q" % (540 * lines[1] // lines[0])
        elif lines is None:
            content = b"q 400 0 0 500 100 150 cm /Im1 Do Q"
        else:
            ops = [b"BT 72 720 Td 16 TL"]
            for line in lines:
                text, size = (line, 12) if isinstance(line, str) else line
                escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
                ops.append(b"/F1 %d Tf (" % size + escaped.encode("latin-1") + b") Tj T*")
            content = b"\n".join([*ops, b"ET"])
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>"
                % (tree, stream, font, image)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    refs = b" ".join(b"%d 0 R" % k for k in kids)
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, len(kids))
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        xref,
    )
    return bytes(out)


def pdf(
    pages: Sequence[Sequence[Line] | Scan | None],
    outline: Sequence[tuple[str, int, int]] = (),
    title: str = "",
    password: str | None = None,
) -> bytes:
    """A PDF; ``outline``: ``(title, 1-based page, level)`` bookmarks, level 0 the top."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(_pdf_objects(pages))))
    parents: list[object] = []
    for text, page, level in outline:
        parent = parents[level - 1] if level else None
        item = writer.add_outline_item(title=text, page_number=page - 1, parent=parent)
        parents[level:] = [item]
    if title:
        writer.add_metadata({"/Title": title})
    if password:
        writer.encrypt(password, algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def word() -> bytes:
    doc = docx.Document()
    doc.core_properties.title = "Onboarding guide"
    doc.add_heading("Onboarding guide", level=0)
    doc.add_paragraph("Welcome to the team. Read this before your first day.")
    doc.add_heading("Laptop setup", level=1)
    doc.add_paragraph("Enroll the laptop in device management before logging in.")
    doc.add_paragraph("Install the VPN client", style="List Bullet")
    doc.add_paragraph("Turn on disk encryption", style="List Bullet")
    doc.add_heading("Who to ask", level=2)
    grid = doc.add_table(rows=3, cols=2)
    for row, cells in zip(
        grid.rows, [("Topic", "Contact"), ("Payroll", "Dana"), ("Badges", "Ike")], strict=True
    ):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    doc.add_paragraph("# not a heading, a hash in the text")
    buffer = io.BytesIO()
    doc.save(buffer)
    return buffer.getvalue()


def slides() -> bytes:
    deck = pptx.Presentation()
    deck.core_properties.title = "Quarterly review"
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Revenue"
    body = first.placeholders[1].text_frame
    body.text = "Revenue grew in every region"
    sub = body.add_paragraph()
    sub.text = "Europe led with new contracts"
    sub.level = 1
    first.notes_slide.notes_text_frame.text = "Mention the Lisbon office."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Headcount"
    shape = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2))
    for r, cells in enumerate([("Team", "People"), ("Support", "12"), ("Sales", "30")]):
        for c, text in enumerate(cells):
            shape.table.cell(r, c).text = text
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def workbook(rows: int = 3) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Servers"
    sheet.append(["Host", "Role", "Region"])
    for n in range(rows):
        sheet.append([f"web-{n}", "frontend" if n % 2 else "backend", "eu-west"])
    book.create_sheet("Empty")
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


HTML = """<!DOCTYPE html>
<html><head><title>Backups - Ops manual</title><script>var tracking = 1;</script></head>
<body>
<header><a href="/">Ops manual home</a></header>
<nav><ul><li><a href="a.html">Every page of the site</a></li></ul></nav>
<div class="navheader">Prev Next</div>
<main>
<h1 id="backups">Backups</h1>
<p>Backups run nightly at 02:00 and keep <strong>30 days</strong> of snapshots.</p>
<section id="restore"><h2>Restoring a snapshot</h2>
<p>Use <code>restic restore</code> with the snapshot id.</p>
<pre><code># stop the service first
systemctl stop app</code></pre></section>
<h2><a id="_retention"></a>Retention table</h2>
<table><tr><th>Tier</th><th>Days</th></tr><tr><td>hot</td><td>7</td></tr></table>
</main>
<footer>Copyright the ops team</footer>
</body></html>
"""
