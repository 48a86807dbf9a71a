"""The sentences of a Markdown passage, in reading order: what an extractive answer quotes.

The passage is parsed with markdown-it (CommonMark and tables), so structure comes from
the parser, not from regular expressions over raw lines: headings, tables (a table's rows
without its header too, as a chunk cut mid-table has them), HTML blocks and code blocks
are not prose and give no sentences; list markers, emphasis and link
targets disappear (a link keeps its words); inline code is kept with its backticks. A
sentence ending in ``:`` that introduces a one-line code block takes the command with it
(``To list them, run: `kubectl get pods```); any other sentence ending in ``:`` is left
out, since what it introduces is not quoted. Sentences end at ``.``, ``!`` or ``?``
followed by a space and a capital letter or a digit, never inside inline code, after an
abbreviation (``e.g.``, ``i.e.``, ``vs.``) or an initial, nor inside a version number
(``v1.28.2``: no space follows its dots).

>>> [s.text for s in sentences("## Pods\\n\\nA Pod runs containers, e.g. `nginx`. "
...                            "It shares one IP (see v1.28.2).\\n\\n- _Pods_ are [cheap](/x).")]
['A Pod runs containers, e.g. `nginx`.', 'It shares one IP (see v1.28.2).', 'Pods are cheap.']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

#: Words after which a period does not end a sentence (compared lowercased).
ABBREVIATIONS = frozenset(
    [
        "e.g.",
        "i.e.",
        "vs.",
        "cf.",
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "st.",
        "no.",
        "fig.",
        "approx.",
        "incl.",
        "resp.",
        "al.",
        "ca.",
        "esp.",
        "viz.",
    ]
)
#: A one-line code block at most this long joins the sentence that introduces it.
INLINE_CODE_CHARS = 100
# A candidate end: the punctuation (and closing quotes or brackets), then spaces, then
# what starts a sentence.
_END = re.compile(r"[.!?][\"')\]]*(?=\s+[\"'(\[`*_]?[A-Z0-9])")
_CODE_SPAN = re.compile(r"`[^`]*`")
_INITIAL = re.compile(r"^[A-Z]\.$")
# A table cut from its header (a chunk that starts mid-table) parses as a paragraph.
_TABLE_ROW = re.compile(r"^\s*\|.*\|", re.MULTILINE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Sentence:
    """One sentence: ``text`` as it is shown (inline Markdown reduced to its words, inline
    code kept), ``block`` the paragraph or list item it is in, ``position`` its place in
    the passage (reading order), ``linked`` the share of its characters that are link
    text (near 1 in a "What's next" list: a pointer, not an answer)."""

    text: str
    block: int
    position: int
    linked: float = 0.0


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _inline(token: Token) -> tuple[str, str]:
    """The words of an inline token (text and inline code; link targets, emphasis
    markers, images and inline HTML left out), and the same with link text blanked."""
    out: list[str] = []
    unlinked: list[str] = []
    depth = 0
    for child in token.children or []:
        piece = ""
        if child.type == "text":
            piece = child.content
        elif child.type == "code_inline":
            piece = f"`{child.content}`"
        elif child.type in ("softbreak", "hardbreak"):
            piece = " "
        elif child.type == "link_open":
            depth += 1
        elif child.type == "link_close":
            depth -= 1
        out.append(piece)
        unlinked.append(" " * len(piece) if depth else piece)
    return _SPACE.sub(" ", "".join(out)).strip(), " ".join("".join(unlinked).split())


def _is_abbreviation(text: str, end: int) -> bool:
    """Whether the word that ends at ``end`` (its period included) is an abbreviation
    or an initial, after which a sentence goes on."""
    word = text[:end].rsplit(None, 1)[-1].lstrip("([\"'")
    return word.lower() in ABBREVIATIONS or bool(_INITIAL.match(word))


def split(text: str) -> list[str]:
    """``text`` (one paragraph, inline Markdown already reduced) cut into sentences.

    >>> split("Run it, i.e. now. Then stop! Version 1.2 is out. `a. B` stays.")
    ['Run it, i.e. now.', 'Then stop!', 'Version 1.2 is out.', '`a. B` stays.']
    """
    # Ends inside inline code do not count: the code is masked, keeping its length.
    masked = _CODE_SPAN.sub(lambda m: "`" + "X" * (len(m.group()) - 2) + "`", text)
    pieces, start = [], 0
    for match in _END.finditer(masked):
        end = match.end()
        if masked[match.start()] == "." and _is_abbreviation(masked, match.start() + 1):
            continue
        pieces.append(text[start:end].strip())
        start = end
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _one_line_code(token: Token) -> str | None:
    lines = [line for line in token.content.splitlines() if line.strip()]
    if len(lines) == 1 and len(lines[0].strip()) <= INLINE_CODE_CHARS and "`" not in lines[0]:
        return f"`{lines[0].strip()}`"
    return None


@lru_cache(maxsize=4096)
def sentences(markdown: str) -> tuple[Sentence, ...]:
    """The prose sentences of ``markdown`` in reading order (see the module doc).
    Passages recur across questions, so the result is cached."""
    tokens = _parser().parse(markdown)
    found: list[tuple[str, int, float]] = []  # (text, block, linked)
    skip = 0  # inside a heading or a table: not prose
    block = 0
    for i, token in enumerate(tokens):
        if token.type in ("heading_open", "table_open"):
            skip += 1
        elif token.type in ("heading_close", "table_close"):
            skip -= 1
        elif token.type == "inline" and not skip and not _TABLE_ROW.search(token.content):
            block += 1
            text, unlinked = _inline(token)
            share = 1 - len(unlinked) / len(text) if text else 0.0
            # One share for the paragraph: link text cannot be told apart per sentence
            # once the spaces are gone, and a list of pointers is one block anyway.
            found += [(s, block, max(0.0, share)) for s in split(text)]
        elif token.type in ("fence", "code_block") and found and found[-1][0].endswith(":"):
            # "To list them, run:" and the command: one sentence, if the command is short
            # and comes right after the paragraph that introduces it.
            code = _one_line_code(token)
            if code and tokens[i - 1].type == "paragraph_close":
                text, where, share = found[-1]
                found[-1] = (f"{text} {code}", where, share)
    kept = [f for f in found if not f[0].endswith(":")]
    return tuple(Sentence(t, b, n, round(lk, 3)) for n, (t, b, lk) in enumerate(kept))
