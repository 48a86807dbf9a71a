"""A page's Markdown structure from markdown-it-py's tokens: headings and code ranges.

``outline(["Install", "=======", "", "```sh", "# a comment", "```"])`` gives one
``Heading(level=1, text="Install", anchor="install", line_start=1, line_end=2)`` and the
code range ``(4, 6)``: setext and ATX headings alike, and a ``#`` line inside a fence of
any length is code, never a heading. Line numbers are 1-based and inclusive, taken from
each token's ``map``.

Anchors are the ones GitHub (and Hugo's default ``github`` anchorizer) give: the
heading's text lowercased, punctuation dropped, spaces to ``-``; a heading whose anchor
is already taken on the page gets ``-1``, ``-2`` ... (``github-slugger``'s rule), and a
Hugo ``{#custom-id}`` is used as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

#: Block structure only: the inline rules are most of the parse time, and only headings'
#: text needs them (``_INLINE``). CommonMark, as GitHub's and Hugo's parsers follow it.
_BLOCKS = MarkdownIt("commonmark").disable("inline")
_INLINE = MarkdownIt("commonmark")
_CUSTOM_ID = re.compile(r"\s*\{#([\w.-]+)\}\s*$")
_SLUG_DROP = re.compile(r"[^\w\- ]")
_CODE = ("fence", "code_block")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str  # as written, inline markup kept: "Use `kubectl`"
    anchor: str
    line_start: int
    line_end: int  # a setext heading's underline


@dataclass(frozen=True)
class Outline:
    """The page's top-level headings in order, and the line ranges of its code blocks
    (fenced or indented, at any depth), within which a blank line does not end a block."""

    headings: list[Heading]
    code: list[tuple[int, int]]


def slug(text: str) -> str:
    """GitHub's anchor for a heading's text: ``"Types of volumes!"`` -> ``types-of-volumes``."""
    return _SLUG_DROP.sub("", text.strip().lower()).replace(" ", "-")


class _Anchors:
    """Unique anchors on one page, numbered as ``github-slugger`` numbers them."""

    def __init__(self) -> None:
        self.taken: dict[str, int] = {}

    def claim(self, wanted: str) -> str:
        anchor = wanted
        while anchor in self.taken:
            self.taken[wanted] += 1
            anchor = f"{wanted}-{self.taken[wanted]}"
        self.taken[anchor] = 0
        return anchor


def _plain(source: str) -> str:
    """The text a reader sees: code spans' content, links' and images' words, no HTML."""
    words: list[str] = []
    for token in _INLINE.parseInline(source)[0].children or []:
        if token.type in ("text", "code_inline"):
            words.append(token.content)
        elif token.type == "image":
            words.append(token.content)  # the alt text
        elif token.type in ("softbreak", "hardbreak"):
            words.append(" ")
    return "".join(words)


def _heading(inline: Token, anchors: _Anchors) -> tuple[str, str]:
    text = " ".join(inline.content.split())  # a setext heading may span lines
    custom = _CUSTOM_ID.search(text)
    text = _CUSTOM_ID.sub("", text)
    return text, anchors.claim(custom.group(1) if custom else slug(_plain(text)))


def outline(lines: Sequence[str]) -> Outline:
    tokens = _BLOCKS.parse("\n".join(lines))
    anchors = _Anchors()
    headings: list[Heading] = []
    code: list[tuple[int, int]] = []
    for i, token in enumerate(tokens):
        if token.map is None:
            continue
        start, end = token.map  # 0-based, end exclusive
        if token.type == "heading_open":
            # Every heading takes its anchor, as on GitHub; only those outside lists and
            # quotes start a section.
            text, anchor = _heading(tokens[i + 1], anchors)
            if token.level == 0:
                headings.append(Heading(int(token.tag[1]), text, anchor, start + 1, end))
        elif token.type in _CODE:
            code.append((start + 1, end))
    return Outline(headings, code)
