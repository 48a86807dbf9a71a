"""The sentences of a Markdown passage, in reading order: what an extractive answer quotes.

The passage is parsed with markdown-it (CommonMark and tables), so structure comes from
the parser, not from regular expressions over raw lines: headings, HTML blocks, code
blocks and a table's rows without their header (as a chunk cut mid-table has them) are
not prose and give no sentences. A table row with its header is one sentence, each cell
after its column's name (``Severity: SEV3; Acknowledge within: 30 minutes.``): reference
pages keep their answers in tables, and a row says nothing without its header. List
markers, emphasis and link targets disappear (a link keeps its words); inline code is
kept with its backticks. A sentence ending in ``:`` that introduces a one-line code
block takes the command with it (``To list them, run: `kubectl get pods```), and one
that introduces a short flat list takes its entries, joined by ``;`` (``You can work
abroad for 30 days as long as: the country is approved; your manager agrees.``): the
conditions are the statement. Any other sentence ending in ``:`` is left out, since what
it introduces is not quoted. Sentences end at ``.``, ``!`` or ``?`` followed by a space
and a capital letter or a digit, never inside inline code, after an abbreviation
(``e.g.``, ``i.e.``, ``vs.``) or an initial, nor inside a version number (``v1.28.2``:
no space follows its dots).

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
#: A list of at most this many entries and words joins the sentence that introduces it.
LIST_ENTRIES = 5
LIST_WORDS = 60
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
    text (near 1 in a "What's next" list: a pointer, not an answer), ``row`` whether it
    is a table row, ``group`` the outermost list or table it is part of (1, 2, ... in
    reading order; 0 for a paragraph): a question that asks for a list is answered by
    the whole of it."""

    text: str
    block: int
    position: int
    linked: float = 0.0
    row: bool = False
    group: int = 0


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
    found: list[tuple[str, int, float, bool, int]] = []  # (text, block, linked, row, group)
    skip = 0  # inside a heading or a table: not prose
    block = 0
    groups, depth = 0, 0  # lists and tables seen; how deep in one the token is
    header: list[str] = []  # the table's column names
    cells: list[tuple[str, str]] = []  # the row's cells: (text, text with links blanked)
    consumed = -1  # tokens up to this one joined the sentence before them
    for i, token in enumerate(tokens):
        if i <= consumed:
            continue
        if (
            token.type in ("bullet_list_open", "ordered_list_open")
            and not skip
            and found
            and found[-1][0].endswith(":")
            and tokens[i - 1].type == "paragraph_close"
        ):
            entries, end = _short_list(tokens, i)
            if entries:
                text, where, share, _, group = found[-1]
                found[-1] = (f"{text} {'; '.join(entries)}.", where, share, False, group)
                consumed = end
                continue
        if token.type in ("bullet_list_open", "ordered_list_open", "table_open"):
            depth += 1
            groups += depth == 1
        elif token.type in ("bullet_list_close", "ordered_list_close", "table_close"):
            depth -= 1
        group = groups if depth else 0
        if token.type in ("heading_open", "table_open"):
            skip += 1
            header = [] if token.type == "table_open" else header
        elif token.type in ("heading_close", "table_close"):
            skip -= 1
        elif token.type == "tr_open":
            cells = []
        elif token.type == "inline" and tokens[i - 1].type in ("th_open", "td_open"):
            cells.append(_inline(token))
        elif token.type == "tr_close" and tokens[i - 1].type == "th_close":
            header = [text for text, _ in cells]
        elif token.type == "tr_close" and header:
            block += 1
            found += [(*_row(header, cells, block), group)] if any(t for t, _ in cells) else []
        elif token.type == "inline" and not skip and not _TABLE_ROW.search(token.content):
            block += 1
            text, unlinked = _inline(token)
            share = 1 - len(unlinked) / len(text) if text else 0.0
            # One share for the paragraph: link text cannot be told apart per sentence
            # once the spaces are gone, and a list of pointers is one block anyway.
            found += [(s, block, max(0.0, share), False, group) for s in split(text)]
        elif token.type in ("fence", "code_block") and found and found[-1][0].endswith(":"):
            # "To list them, run:" and the command: one sentence, if the command is short
            # and comes right after the paragraph that introduces it.
            code = _one_line_code(token)
            if code and tokens[i - 1].type == "paragraph_close":
                text, where, share, _, group = found[-1]
                found[-1] = (f"{text} {code}", where, share, False, group)
    kept = [f for f in found if not f[0].endswith(":")]
    return tuple(
        Sentence(t, b, n, round(lk, 3), row, g) for n, (t, b, lk, row, g) in enumerate(kept)
    )


def _short_list(tokens: list[Token], start: int) -> tuple[list[str], int]:
    """The entries of the flat list opening at ``tokens[start]`` (their words, closing
    punctuation removed) and the index of its closing token; no entries when the list is
    nested or longer than ``LIST_ENTRIES`` entries or ``LIST_WORDS`` words."""
    opening = tokens[start]
    closing = opening.type.replace("_open", "_close")
    entries: list[str] = []
    for j in range(start + 1, len(tokens)):
        token = tokens[j]
        if token.type == closing and token.level == opening.level:
            words = sum(len(e.split()) for e in entries)
            fits = 0 < len(entries) <= LIST_ENTRIES and words <= LIST_WORDS
            return (entries if fits else []), j
        if token.type in ("bullet_list_open", "ordered_list_open", "fence", "code_block"):
            return [], j
        if token.type == "inline":
            entries.append(_inline(token)[0].rstrip(".;,"))
    return [], len(tokens)


def _row(
    header: list[str], cells: list[tuple[str, str]], block: int
) -> tuple[str, int, float, bool]:
    """A table row as one sentence: ``Name: cell; Name: cell.``, empty cells left out,
    a cell under an empty column name as it is."""
    parts, unlinked = [], []
    for name, (text, bare) in zip(header, cells, strict=False):
        if text:
            parts.append(f"{name}: {text}" if name else text)
            unlinked.append(bare)
    text = "; ".join(parts).rstrip(".") + "."
    bare = " ".join(" ".join(unlinked).split())
    share = 1 - len(bare) / len(" ".join(" ".join(t for t, _ in cells).split()) or "x")
    return text, block, max(0.0, share), True
