"""Markdown and plain text: bytes decoded as UTF-8, with a warning where they are not.

Markdown is read as written (``heron.libraries.parse`` then takes its front matter and
shortcodes out); a plain-text file's lines stay as they are, except a line that Markdown
would read as structure (``# ...``, a fence, an underline), which is escaped.
"""

from __future__ import annotations

from heron.libraries.readers.base import Document, Unreadable, plain

#: Bytes inspected to tell binary from text, as git does.
SNIFF = 8000


def decode(data: bytes) -> tuple[str, str | None]:
    """``(text, warning)``: UTF-8 (a BOM dropped); bad bytes replaced, and said where.
    ``Unreadable`` for a binary file (NUL bytes)."""
    if b"\x00" in data[:SNIFF]:
        raise Unreadable("binary file (NUL bytes), not text")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        warning = (
            f"not valid UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start}); indexed "
            "with replacement characters. Re-encode it, e.g. iconv -f latin1 -t utf-8"
        )
        return data.decode("utf-8", "replace").removeprefix("\ufeff"), warning


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def read_markdown(data: bytes) -> Document:
    text, warning = decode(data)
    return Document(_lines(text), warnings=[warning] if warning else [])


def read_plain(data: bytes) -> Document:
    text, warning = decode(data)
    lines = [line.rstrip() if plain(line) == line.strip() else plain(line) for line in _lines(text)]
    return Document(lines, warnings=[warning] if warning else [])
