"""Excel workbooks (.xlsx) through openpyxl.

A sheet reads as a section named for it (``heron.libraries.readers.base.sheet``: its
first non-empty row the header of every part of its table). openpyxl (MIT) reads the
values Excel last computed (``data_only``) in its streaming read-only mode, so a large
workbook is read row by row, not held as objects.
"""

from __future__ import annotations

import io
import zipfile

import openpyxl
from openpyxl.utils.exceptions import InvalidFileException

from heron.libraries.readers.base import Document, Unreadable, sheet
from heron.libraries.readers.zipped import check_package


def read_xlsx(data: bytes) -> Document:
    check_package(data, "Excel")
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise Unreadable(f"not an Excel workbook ({exc}); export it again as .xlsx") from exc
    try:
        doc = Document([], title=" ".join((book.properties.title or "").split()))
        for grid in book.worksheets:
            doc.lines += sheet(grid.title, grid.iter_rows(values_only=True))
        return doc
    finally:
        book.close()
