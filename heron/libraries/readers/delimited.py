"""CSV through the standard library's csv: its dialect sniffed (commas, semicolons, tabs
or bars), its first non-empty row the header of every part of its table
(``heron.libraries.readers.base.sheet``)."""

from __future__ import annotations

import csv
import io

from heron.libraries.readers.base import Document, Unreadable, sheet
from heron.libraries.readers.text import decode


def read(data: bytes) -> Document:
    text, warning = decode(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel  # one column, or nothing to tell by: commas
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise Unreadable(f"not a readable CSV file ({exc}); save it again as CSV") from exc
    return Document(sheet("", rows), warnings=[warning] if warning else [])
