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

from collections.abc import Sequence

from heron.agent.answer import Citation

RULES = (
    "You are Heron, an assistant that answers from the passages and tool results it is "
    "given. Answer briefly and plainly."
)
WITH_TOOLS = "Call a tool when the question needs data you were not given."
WITH_PASSAGES = (
    "Answer from the passages above and cite the ones you use, like [1]. If they do not hold\n"
    "the answer, say so."
)
#: Characters of one passage in the prompt; its chunk is cut at a word boundary.
PASSAGE_CHARS = 1200
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
    return f"Question: {message}\n\nQuoted facts:\n{listed}\n\n{LEAD}"


def user_prompt(message: str, passages: Sequence[tuple[Citation, str]]) -> str:
    """``message`` as the model sees it: alone, or after ``passages`` ((citation, text)
    pairs in rank order), numbered for citing."""
    if not passages:
        return message
    blocks = []
    for number, (citation, text) in enumerate(passages, 1):
        first, last = citation.line_range
        blocks.append(
            f"[{number}] {citation.label} lines {first}-{last}\n{cut(text, PASSAGE_CHARS)}"
        )
    return "Passages:\n\n" + "\n\n".join(blocks) + f"\n\n{WITH_PASSAGES}\n\nQuestion: {message}"
