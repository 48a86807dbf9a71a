"""Catching an answer that loops, while it streams.

A small model that loses the thread repeats itself until ``max_tokens``:
``Heron.Tools.Heron.Tools.Heron.Tools...`` for 512 tokens. Two signs, either one is a loop:

- a word 4-gram seen 3 times: words are runs of letters and digits (``\\w+``), lowercased,
  so punctuation between them (``Heron.Tools.``) does not hide the repeat; text inside
  code fences is not counted (a manifest repeats its keys legitimately);
- a short character cycle: the text ends with a unit of 1 to ``CYCLE_MAX`` characters,
  holding a letter, repeated back to back over ``CYCLE_CHARS`` characters or more and at
  least 3 times (``HeronToolsHeronToolsHeronTools``, text without spaces). Units without
  a letter (``|---``, ``=====``) are a table rule or an underline, not a loop.

>>> repeats("Heron.Tools.Heron.Tools.Heron.Tools.Heron.Tools.")
"on repeating the words 'heron tools heron tools' (3 times)"
>>> repeats("A Pod runs one or more containers. A Deployment runs Pods.") is None
True
"""

from __future__ import annotations

import re
from collections import Counter

#: A word n-gram repeated this often is a loop (the benchmark's rule: a 4-gram, 3 times).
NGRAM = 4
TIMES = 3
#: Longest unit of a character cycle, and the least span it must cover.
CYCLE_MAX = 32
CYCLE_CHARS = 32
_WORD = re.compile(r"\w+")
_LETTER = re.compile(r"[^\W\d_]")
# A unit of 1 to CYCLE_MAX characters and at least two more copies of it, back to back.
_CYCLE = re.compile(rf"(.{{1,{CYCLE_MAX}}}?)\1{{{TIMES - 1},}}", re.DOTALL)
# A closed fence, or one still open at the end of the text.
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)


def repeated_ngram(text: str, n: int = NGRAM, times: int = TIMES) -> str | None:
    """The first word ``n``-gram seen ``times`` times in ``text`` (code fences left out)."""
    words = _WORD.findall(_FENCE.sub("\n", text).lower())
    seen: Counter[tuple[str, ...]] = Counter()
    for i in range(len(words) - n + 1):
        gram = tuple(words[i : i + n])
        seen[gram] += 1
        if seen[gram] >= times:
            return " ".join(gram)
    return None


def cycle(text: str, *, anywhere: bool = False) -> str | None:
    """The unit of a character cycle (see the module doc) that ``text`` ends with, or
    with ``anywhere`` that it holds anywhere; None when there is none."""
    if anywhere:
        for match in _CYCLE.finditer(text):
            unit = match.group(1)
            if len(match.group()) >= max(TIMES * len(unit), CYCLE_CHARS) and _LETTER.search(unit):
                return unit
        return None
    for unit in range(1, CYCLE_MAX + 1):
        span = max(TIMES * unit, CYCLE_CHARS)
        if len(text) < span:
            break
        tail = text[-span:]
        # A string is periodic with period p when it equals itself shifted by p.
        if tail[unit:] == tail[:-unit] and _LETTER.search(tail[:unit]):
            return tail[-unit:]
    return None


def repeats(text: str) -> str | None:
    """What makes ``text`` a loop, in words, or None when it reads as prose."""
    gram = repeated_ngram(text)
    if gram is not None:
        return f"on repeating the words {gram!r} ({TIMES} times)"
    unit = cycle(text, anywhere=True)
    if unit is not None:
        return f"the characters {unit!r} over and over"
    return None


class RepetitionGuard:
    """``feed`` each streamed piece; it returns what repeats once the text loops.

    Word n-grams are counted again only when a piece completes a word, and the cycle is
    looked for at the end of the text only, so a 512-token answer costs a few ms.
    """

    def __init__(self) -> None:
        self.text = ""
        self.reason: str | None = None

    def feed(self, piece: str) -> str | None:
        self.text += piece
        if self.reason is None:
            unit = cycle(self.text)
            if unit is not None:
                self.reason = f"on repeating the characters {unit!r}"
            elif _WORD.sub("", piece):  # a word may have ended: count the n-grams again
                gram = repeated_ngram(self.text)
                if gram is not None:
                    self.reason = f"on repeating the words {gram!r} ({TIMES} times)"
        return self.reason

    def end(self) -> str | None:
        """At the end of the stream: the last word is whole now, so count once more."""
        if self.reason is None:
            gram = repeated_ngram(self.text)
            if gram is not None:
                self.reason = f"on repeating the words {gram!r} ({TIMES} times)"
        return self.reason
