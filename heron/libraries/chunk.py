"""Cutting a page into chunks that follow its headings and fit the embedder.

A chunk is one section, or a run of whole subsections under it, or (for a long section)
a run of its paragraphs; code fences are never cut in the middle unless they alone
exceed the cap. Sections, headings and code come from ``heron.libraries.markdown``
(markdown-it-py's tokens). Each chunk keeps its heading path, the anchor of its heading
(unique on its page) and the range of file lines it covers. Its ``text`` starts with the
page title and heading path, so a chunk read alone still says where it is::

    Volumes > Types of volumes > configMap
    A ConfigMap provides a way to inject configuration data into pods...

The cap counts tokens with the embedder's own tokenizer; it defaults to the embedder's
maximum input (256 for the bundled model, no overlap), else 512 with 64 tokens of
overlap between consecutive chunks of one section.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from heron.libraries.markdown import outline
from heron.libraries.parse import Page

TokenCounter = Callable[[Sequence[str]], list[int]]
#: Tokens the model adds around every input ([CLS] and [SEP] for BERT-like models).
SPECIAL_TOKENS = 2
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
# A fence closes with a run of its own character at least as long as the one it opened
# with, so a ```` fence keeps the ``` lines inside it.
_CODE = re.compile(r"^(\s*)(`{3,}|~{3,})[^\n]*\n(.*?)^\s*\2(?:`*|~*)\s*$", re.MULTILINE | re.DOTALL)
_SPACES = re.compile(r"[ \t]+")
#: Lines of a code fence the embedder reads; the lexical index reads all of them.
CODE_LINES = 8


@dataclass(frozen=True)
class ChunkPolicy:
    max_tokens: int
    overlap: int = 0


@dataclass(frozen=True)
class Chunk:
    page: str
    ordinal: int
    title: str
    headings: tuple[str, ...]
    anchor: str
    line_start: int  # 1-based, inclusive
    line_end: int
    body: str

    @property
    def id(self) -> str:
        return f"{self.page}#{self.ordinal}"

    @property
    def heading(self) -> str:
        return " > ".join(self.headings)

    @property
    def text(self) -> str:
        return f"{' > '.join((self.title, *self.headings))}\n{self.body}"

    @property
    def dense_text(self) -> str:
        """What the embedder reads: ``text`` with links reduced to their words, HTML tags
        out and code fences cut to ``CODE_LINES`` lines. URLs and long manifests are a
        quarter of the Kubernetes pages' tokens and say little about meaning; embedding
        time is linear in tokens (measured: 2.24M tokens -> 1.64M)."""
        text = _TAG.sub(" ", _LINK.sub(r"\1", self.text))
        text = _CODE.sub(lambda m: "\n".join(m.group(3).split("\n")[:CODE_LINES]) + "\n", text)
        return _SPACES.sub(" ", text)


@dataclass
class _Section:
    headings: tuple[str, ...]
    anchor: str
    line: int  # the heading's line (or the first line for the preamble)
    blocks: list[tuple[int, int, str]]  # (first line, last line, text)


def inner_model(embedder: object) -> object:
    """The model behind a ``CachedEmbedder``, or the embedder itself."""
    return getattr(embedder, "inner", embedder)


def token_counter(embedder: object) -> TokenCounter:
    """Counts with the embedder's tokenizer, untruncated; about 4 characters a token without."""
    tokenizer = getattr(inner_model(embedder), "tokenizer", None)
    if tokenizer is None:
        return lambda texts: [len(t) // 4 + 1 for t in texts]
    from tokenizers import Tokenizer

    # A copy: the embedder's own tokenizer truncates and pads, which would cap the counts.
    counter = Tokenizer.from_str(tokenizer.to_str())
    counter.no_truncation()
    counter.no_padding()
    return lambda texts: [
        len(e.ids) for e in counter.encode_batch(list(texts), add_special_tokens=False)
    ]


def policy_for(embedder: object, max_tokens: int | None, overlap: int | None) -> ChunkPolicy:
    """The embedder's maximum input (its tokenizer's truncation) unless overridden."""
    tokenizer = getattr(inner_model(embedder), "tokenizer", None)
    truncation = getattr(tokenizer, "truncation", None) or {}
    model_max = truncation.get("max_length")
    if max_tokens is None:
        max_tokens = model_max if model_max and model_max < 512 else 512
    if overlap is None:
        overlap = 64 if max_tokens >= 512 else 0
    return ChunkPolicy(max_tokens, min(overlap, max_tokens // 2))


def _sections(page: Page) -> list[_Section]:
    """The page's sections in order (``heron.libraries.markdown``), their paragraphs and
    code blocks as blocks: a blank line ends a block unless it is inside code."""
    structure = outline(page.lines)
    starts = {h.line_start: h for h in structure.headings}
    in_code = {n for first, last in structure.code for n in range(first, last + 1)}
    sections = [_Section((), "", 1, [])]
    stack: list[tuple[int, str]] = []  # (level, heading) of the enclosing headings
    block: list[str] = []
    block_start = 0

    def close(end: int) -> None:
        nonlocal block
        if any(line.strip() for line in block):
            sections[-1].blocks.append((block_start, end, "\n".join(block).strip("\n")))
        block = []

    number = 1
    while number <= len(page.lines):
        if heading := starts.get(number):
            close(number - 1)
            number = heading.line_end + 1
            if heading.level == 1 and not stack and heading.text == page.title:
                continue  # the page's own title heading: already the chunk prefix
            stack = [(lv, h) for lv, h in stack if lv < heading.level]
            stack.append((heading.level, heading.text))
            headings = tuple(h for _, h in stack)
            sections.append(_Section(headings, heading.anchor, heading.line_start, []))
            continue
        line = page.lines[number - 1]
        if not block:
            block_start = number
        if not line.strip() and number not in in_code:
            close(number - 1)
        else:
            block.append(line)
        number += 1
    close(len(page.lines))
    return sections


def _split_long(text: str, start: int, end: int, tokens: int, budget: int) -> list[tuple]:
    """A block over the budget, cut at line ends, then at spaces within long lines."""
    lines = text.split("\n")
    if len(lines) > 1:
        return [(start + i, start + i, line) for i, line in enumerate(lines) if line.strip()]
    parts = math.ceil(tokens / budget * 1.15)
    words = text.split(" ")
    size = math.ceil(len(words) / parts)
    return [(start, end, " ".join(words[i : i + size])) for i in range(0, len(words), size)]


def _fit(blocks: list[tuple[int, int, str]], count: TokenCounter, budget: int) -> list[tuple]:
    """Blocks as ``(first, last, text, tokens)``, none over ``budget``."""
    out: list[tuple[int, int, str, int]] = []
    todo = blocks
    for _ in range(3):  # paragraphs -> lines -> word runs
        if not todo:
            break
        counts = count([text for _, _, text in todo])
        again = []
        for (first, last, text), tokens in zip(todo, counts, strict=True):
            if tokens <= budget or (" " not in text.strip() and "\n" not in text):
                out.append((first, last, text, tokens))
            else:
                again += _split_long(text, first, last, tokens, budget)
        todo = again
    out += [(first, last, text, budget) for first, last, text in todo]
    return sorted(out, key=lambda b: b[0])


def chunk_page(page: Page, policy: ChunkPolicy, count: TokenCounter) -> list[Chunk]:
    sections = _sections(page)
    if page.description:
        sections[0].blocks.insert(0, (1, 1, page.description))
    prefixes = count([" > ".join((page.title, *s.headings)) for s in sections])
    chunks: list[Chunk] = []
    i = 0
    while i < len(sections):
        section = sections[i]
        budget = policy.max_tokens - SPECIAL_TOKENS - prefixes[i] - 1
        pieces = _fit(section.blocks, count, max(budget, 16))
        # Whole subsections that fit join their parent's chunk instead of standing alone.
        j = i + 1
        while (
            section.headings  # the preamble stands alone
            and j < len(sections)
            and sections[j].headings[: len(section.headings)] == section.headings
        ):
            child = sections[j]
            heading = (child.line, child.line, child.headings[-1])
            extra = _fit([heading, *child.blocks], count, max(budget, 16))
            if sum(p[3] for p in pieces) + sum(p[3] for p in extra) > budget:
                break
            pieces += extra
            j += 1
        chunks += _pack(page, section, pieces, budget, policy.overlap, len(chunks))
        i = j
    if not chunks and (page.title or page.description):
        body = page.description or page.title
        chunks.append(Chunk(page.id, 0, page.title, (), "", 1, max(len(page.lines), 1), body))
    return chunks


def _join(pieces: list[tuple]) -> str:
    """Pieces cut from one block (adjacent lines) rejoin with one newline, others with two."""
    text = pieces[0][2]
    for previous, piece in itertools.pairwise(pieces):
        text += ("\n" if piece[0] == previous[1] + 1 else "\n\n") + piece[2]
    return text


def _pack(
    page: Page, section: _Section, pieces: list[tuple], budget: int, overlap: int, first: int
) -> list[Chunk]:
    """Pieces of one section, greedily into chunks of at most ``budget`` tokens."""
    chunks: list[Chunk] = []
    current: list[tuple] = []
    used = 0

    def emit() -> None:
        start = section.line if not chunks else current[0][0]
        chunks.append(
            Chunk(
                page.id,
                first + len(chunks),
                page.title,
                section.headings,
                section.anchor,
                start,
                current[-1][1],
                _join(current),
            )
        )

    for piece in pieces:
        if current and used + piece[3] > budget:
            emit()
            carried: list[tuple] = []
            for previous in reversed(current):  # overlap: the tail of the last chunk
                if sum(p[3] for p in carried) + previous[3] > overlap:
                    break
                carried.insert(0, previous)
            while carried and sum(p[3] for p in carried) + piece[3] > budget:
                carried.pop(0)
            current, used = carried, sum(p[3] for p in carried)
        current.append(piece)
        used += piece[3]
    if current:
        emit()
    return chunks
