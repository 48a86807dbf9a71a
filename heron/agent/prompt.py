"""The prompt: rules and skills in the system message; the library passages, with their
citations, in the user's turn, right before the question (small models follow context
there far better than in the system message).

>>> print(user_prompt("What is Heron?", [(citation, "Heron is ...")]))  # doctest: +SKIP
Passages:
<BLANKLINE>
[1] (heron, agent) lines 1-12
Heron is ...
<BLANKLINE>
Answer from the passages above and cite the ones you use, like [1]. If they do not hold
the answer, say so.
<BLANKLINE>
Question: What is Heron?
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from heron.agent.answer import Citation
from heron.core.tools import Tool

RULES = (
    "You are Heron, an assistant that answers from the passages and tool results it is "
    "given. Answer briefly and plainly."
)
WITH_TOOLS = "Call a tool when the question needs data you were not given."
WITH_PASSAGES = (
    "Answer from the passages above and cite the ones you use, like [1]. If they do not hold\n"
    "the answer, say so."
)
PASSAGES = "Passages:"
QUESTION = "Question:"
QUOTED = "Quoted facts:"
#: Characters of one passage in the prompt; its chunk is cut at a word boundary.
PASSAGE_CHARS = 1200
#: A passage header (``header``) as a model echoes it: ``[2] (acme, it/vpn) lines 9-13``,
#: also renumbered, without its ``[n]`` or with ``line`` for ``lines`` (SmolLM2-135M
#: writes all of these). ``lines a-b`` after a ``(library, page)`` label is what no
#: answer writes on its own: a bare label, a citation the model chose, is not matched.
#: A library's name holds no comma, so the label splits at its first one, in linear time.
HEADER = re.compile(
    r"(?:\[\d+\][ \t]*)?\([^(),\n]{1,200},[^()\n]{1,300}\)"
    r"[ \t]*lines?[ \t]+\d+[ \t]*[-\u2013][ \t]*\d+",
    re.IGNORECASE,
)
#: What a capable model is asked to write above an extractive answer: one line, no facts.
LEAD = (
    "Write one short sentence that introduces the answer to the question, using only the "
    "quoted facts. Do not add facts and do not repeat the quotes."
)


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " ..."


def system_prompt(skills: str = "", *, tools: bool = False, instructions: str = "") -> str:
    """``skills``: the text of ``SkillIndex.context_for``; ``tools``: whether tools are
    offered; ``instructions``: the client's own system messages, after Heron's rules
    (which they cannot push out of the prompt)."""
    parts = (RULES, WITH_TOOLS if tools else "", instructions.strip(), skills)
    return "\n\n".join(part for part in parts if part)


def lead_prompt(message: str, quotes: Sequence[str]) -> str:
    """The user turn asking for an extractive answer's one-line lead."""
    listed = "\n".join(f"- {q}" for q in quotes)
    return f"{QUESTION} {message}\n\n{QUOTED}\n{listed}\n\n{LEAD}"


def header(number: int, citation: Citation) -> str:
    """The line above a passage in the prompt: ``[1] (heron, agent) lines 1-12``."""
    first, last = citation.line_range
    return f"[{number}] {citation.label} lines {first}-{last}"


def written(skills: str = "", tools: Sequence[Tool] = ()) -> list[str]:
    """The prompt text Heron itself writes, which no answer may give back (the echo
    guard, ``heron.agent.guard.Scaffold``): its rules, the framing of the ``skills``
    block (its ``- name: description (path)`` lines are the skills' own words, as a
    passage's are the docs'), and the descriptions of Heron's ``tools``. Passage headers
    are matched by ``HEADER``; the one-word labels (``Passages:``, ``Question:``) hold
    nothing of Heron's to give away."""
    framing = [line for line in skills.splitlines() if not line.startswith("- ")]
    described = [t.description for t in tools]
    return [RULES, WITH_TOOLS, WITH_PASSAGES, *framing, *described]


def skill_lines(skills: str) -> list[str]:
    """The skills' own lines of a skills block (``heron.skills.search.format_context``:
    ``- name: description (path)``), without its framing."""
    return [line for line in skills.splitlines() if line.startswith("- ")]


def lead_written() -> list[str]:
    """``written`` for the lead line's call (``lead_prompt``): its own request, and the
    rules it is sent with."""
    return [RULES, LEAD]


def user_prompt(message: str, passages: Sequence[tuple[Citation, str]]) -> str:
    """``message`` as the model sees it: alone, or after ``passages`` ((citation, text)
    pairs in rank order), numbered for citing."""
    if not passages:
        return message
    blocks = [
        f"{header(number, citation)}\n{cut(text, PASSAGE_CHARS)}"
        for number, (citation, text) in enumerate(passages, 1)
    ]
    body = "\n\n".join(blocks)
    return f"{PASSAGES}\n\n{body}\n\n{WITH_PASSAGES}\n\n{QUESTION} {message}"
