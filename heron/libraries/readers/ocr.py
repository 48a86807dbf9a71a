"""Scanned PDF pages read by Debian's tesseract, when ``HERON_LIBRARY_OCR`` is on.

A page PDFium finds an image and no text on (``Document.scanned``) is rendered by
pypdfium2 at ``DPI`` in grayscale and handed to the ``tesseract`` program (Debian's
``tesseract-ocr``, its language data in ``tesseract-ocr-eng``, ``-por`` ...) as a PGM image
on its standard input; what it prints becomes the page's text, so the page is searched
and cited like any other. The program, not a Python binding: nothing to compile, no model
downloaded at run time, and a page that hangs it is killed at ``TIMEOUT``. A page it
reads nothing from stays in ``scanned``; without the program every page stays there and
the document says why in a warning.
"""

from __future__ import annotations

import shutil
import subprocess
from itertools import groupby

import numpy as np
import pypdfium2 as pdfium

from heron.libraries.readers.base import Document, plain

TESSERACT = "tesseract"
#: Tesseract reads best at about 300 dots per inch (its documentation's advice).
DPI = 300
TIMEOUT = 120.0


def _pgm(page: pdfium.PdfPage) -> bytes:
    """The page as a binary PGM (netpbm) image: a header, then one byte a pixel."""
    bitmap = page.render(scale=DPI / 72, grayscale=True)
    pixels = np.ascontiguousarray(bitmap.to_numpy()).reshape(bitmap.height, bitmap.width)
    return b"P5\n%d %d\n255\n" % (bitmap.width, bitmap.height) + pixels.tobytes()


def _tesseract(image: bytes, languages: str) -> str:
    done = subprocess.run(
        [TESSERACT, "stdin", "stdout", "-l", languages],
        input=image,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:])
    return done.stdout.decode("utf-8", "replace")


def recognise(data: bytes, doc: Document, languages: str) -> Document:
    """``doc`` with the text tesseract reads on its scanned pages (``languages``:
    tesseract's, ``eng`` or ``eng+por``), each in its page's place."""
    if shutil.which(TESSERACT) is None:
        doc.warnings.append(
            f"pages {', '.join(map(str, doc.scanned))} are scanned and HERON_LIBRARY_OCR is "
            "on, but tesseract is not installed: apt-get install tesseract-ocr "
            "tesseract-ocr-eng, then heron index"
        )
        return doc
    read: dict[int, list[str]] = {}
    pdf = pdfium.PdfDocument(data)
    try:
        for number in doc.scanned:
            try:
                text = _tesseract(_pgm(pdf[number - 1]), languages)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                doc.warnings.append(f"page {number}: tesseract failed ({exc})")
                continue
            lines = [plain(line) for line in text.split("\n")]
            if any(lines):
                read[number] = lines
    finally:
        pdf.close()
    out = Document([], [], title=doc.title, warnings=doc.warnings)
    for number, group in groupby(zip(doc.lines, doc.pages, strict=True), key=lambda p: p[1]):
        lines = [line for line, _ in group]
        if number in read:  # the page's bookmarks (headings) kept, then what was read
            lines = [line for line in lines if line.startswith("#")] + read[number] + [""]
        out.lines += lines
        out.pages += [number] * len(lines)
    out.scanned = [n for n in doc.scanned if n not in read]
    if read:
        out.warnings.append(f"pages {', '.join(map(str, sorted(read)))} read by OCR (tesseract)")
    return out
