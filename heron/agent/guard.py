"""Catching an answer that loops, or that echoes its prompt, while it streams.

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

A small model also gives its prompt back: SmolLM2-135M answers "What is the VPN gateway?"
with ``[1] (acme, it/laptop) lines 2-3``, the passage, and Heron's closing instruction
(issue 44). ``Scaffold`` is the prompt text Heron wrote (``heron.agent.prompt.written``:
its rules, labels, skill framing and tool descriptions; the passage headers, by
``prompt.HEADER``), less what the content it framed holds: quoting a passage is an
answer, writing ``Answer from the passages above`` or a header is an echo.
``EchoGuard`` holds back, while a text streams, the little that could still become an
echo, so that none of one is ever shown.

>>> scaffold = Scaffold.of(["Answer from the passages above and cite the ones you use."])
>>> scaffold.echo("Answer from the passages above and cite them, like [1].")
"on echoing Heron's prompt (5 words of its own text verbatim)"
>>> scaffold.echo("The passages above say: restart the client.") is None
True
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from heron.agent.prompt import HEADER

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


#: A run of this many words verbatim from the prompt text Heron wrote is an echo of it.
#: Measured (docs/agent.md, "The echo guard"): of 111,402 sentences of the Kubernetes
#: pages, Heron's docs and SciFact's abstracts, none holds a run of 5 of Heron's words
#: but where Heron's docs quote them (4 would catch "if they do not have").
ECHO_WORDS = 5
#: The longest passage header ``prompt.HEADER`` matches, in characters.
HEADER_CHARS = 540
# What may still become a passage header: a ``(`` not closed yet, or a label closed and
# followed by the start of ``lines a-b`` (a whole one is ``HEADER``'s).
_HEADER_START = re.compile(
    r"\((?:[^()\n]{0,500}"
    r"|[^(),\n]*,[^()\n]*\)[ \t]*"
    r"(?:l|li|lin|line|lines?[ \t]*(?:\d+[ \t]*(?:[-\u2013][ \t]*)?)?)?)",
    re.IGNORECASE,
)
# What may come before a header's ``(`` and is part of it: a ``[n]`` (or ``[``), and
# the ``Passages:`` label the first one follows in the prompt.
_BEFORE_HEADER = re.compile(r"(?:passages:\s*)?(?:\[\d*\]?[ \t]*)?\Z", re.IGNORECASE)


def _label(header: str) -> str:
    """A header from its ``(``: a match may start there, the ``[n]`` before it unread."""
    return header[header.index("(") :]


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@dataclass(frozen=True)
class Scaffold:
    """The prompt text Heron wrote, as an answer would give it back: runs of ``words``
    words (``grams``; ``prefixes``, their beginnings, tell the stream what to hold back)
    and passage headers (``prompt.HEADER``), less those the content holds (``quoted``):
    a passage, the message, a tool's result may say anything, and quoting them is no
    echo. ``Scaffold()`` holds no words of Heron's: it finds passage headers alone."""

    grams: frozenset[tuple[str, ...]] = frozenset()
    prefixes: frozenset[tuple[str, ...]] = frozenset()
    quoted: tuple[str, ...] = ()
    words: int = ECHO_WORDS

    @classmethod
    def of(
        cls, written: Iterable[str], content: Iterable[str] = (), *, words: int = ECHO_WORDS
    ) -> Scaffold:
        """From the texts Heron ``written`` (each on its own: a run across two of them, or
        into the message, is not Heron's) and the ``content`` they framed."""
        content = list(content)
        own = set().union(*(_grams(text, words) for text in written))
        theirs = set().union(*(_grams(text, words) for text in content))
        grams = frozenset(own - theirs)
        prefixes = frozenset(g[:k] for g in grams for k in range(1, words))
        quoted = tuple(_label(m.group()) for text in content for m in HEADER.finditer(text))
        return cls(grams, prefixes, quoted, words)

    def header(self, text: str, start: int = 0) -> str | None:
        """Why ``text`` (from ``start``) echoes a passage header, or None. A header the
        content holds is a quote, also while it streams (``lines 1-1`` of ``1-12``)."""
        for match in HEADER.finditer(text, start):
            if not any(q.startswith(_label(match.group())) for q in self.quoted):
                return "on echoing a passage header of its prompt"
        return None

    def run(self, gram: tuple[str, ...]) -> str | None:
        """Why the words ``gram`` echo Heron's prompt, or None."""
        if gram in self.grams:
            return f"on echoing Heron's prompt ({self.words} words of its own text verbatim)"
        return None

    def echo(self, text: str) -> str | None:
        """Why the whole ``text`` echoes the prompt, in words that quote none of it (they
        reach the answer's notes), or None."""
        if (reason := self.header(text)) is not None:
            return reason
        words = _WORD.findall(text.lower())
        for i in range(len(words) - self.words + 1):
            if (reason := self.run(tuple(words[i : i + self.words]))) is not None:
                return reason
        return None


class EchoGuard:
    """``feed`` each streamed piece; it returns what of the text is now safe to show
    (``""`` while it holds it back) and sets ``reason`` once the text echoes the prompt
    (``Scaffold``), after which it shows nothing more; ``end()``, when the stream ends,
    returns the rest (``""`` when that echoes).

    It holds back the least that could still turn into an echo: the word being written,
    the last words while they begin one of the prompt's runs (``Scaffold.prefixes``:
    "Answer from the" is held until "passages" decides), and a ``(`` that may open a
    passage header until its line shows it does not. Prose flows a word behind the
    model, and no part of an echo is ever shown: a run is caught at its last word, and
    its first was still held.
    """

    def __init__(self, scaffold: Scaffold) -> None:
        self.scaffold = scaffold
        self.text = ""
        self.reason: str | None = None
        self.shown = 0  # characters of ``text`` released
        self._words: list[tuple[int, str]] = []  # (start, word) of the words complete
        self._scanned = 0  # where the next word may start

    def feed(self, piece: str) -> str:
        if self.reason is not None:
            return ""
        before = len(self.text)
        self.text += piece
        self._scan(whole=False)
        if self.reason is None:
            self.reason = self.scaffold.header(self.text, max(0, before - HEADER_CHARS))
        if self.reason is not None:
            return ""
        return self._release(self._held())

    def end(self) -> str:
        """The rest of the text, once the stream is over ('' when it echoes)."""
        if self.reason is None:
            self._scan(whole=True)
        if self.reason is not None:
            return ""
        return self._release(len(self.text))

    def _scan(self, *, whole: bool) -> None:
        """Record the words completed since the last piece, and check the run each one
        ends; the word still being written counts only at the end (``whole``)."""
        n = self.scaffold.words
        for match in _WORD.finditer(self.text, self._scanned):
            if match.end() == len(self.text) and not whole:
                break  # more of this word may come
            self._words.append((match.start(), match.group().lower()))
            self._scanned = match.end()
            if len(self._words) >= n:
                gram = tuple(w for _, w in self._words[-n:])
                self.reason = self.scaffold.run(gram)
                if self.reason is not None:
                    return

    def _held(self) -> int:
        """Where the text that may still become an echo starts."""
        text, held = self.text, len(self.text)
        partial = _WORD.search(text, self._scanned)
        if partial is not None and partial.end() == len(text):
            held = partial.start()
        words = [w for _, w in self._words[-(self.scaffold.words - 1) :]]
        for k in range(len(words), 0, -1):  # the earliest word a run may start at
            if tuple(words[-k:]) in self.scaffold.prefixes:
                held = min(held, self._words[-k][0])
                break
        opening = text.rfind("(", max(0, len(text) - HEADER_CHARS))
        if opening >= 0 and _HEADER_START.fullmatch(text, opening):
            held = min(held, opening)
        # A header's first part: held before its ``(``, or before one comes.
        before = _BEFORE_HEADER.search(text, max(0, held - 32), held)
        return before.start() if before else held

    def _release(self, upto: int) -> str:
        if upto <= self.shown:
            return ""
        out = self.text[self.shown : upto]
        self.shown = upto
        return out
