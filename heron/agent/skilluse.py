"""The skills a turn used, told to the skills' usage log (``heron skills usage``).

Every turn's message is a skill query (``skill_query``: ``SkillIndex.context_for``,
logged), extractive answers' too; it joins a generated answer's prompt when its best
skill ``fits``. After the answer, ``record_skill_use`` reports each skill the model read
(``read_skill``) and each prompted one the answer names; skills prompted and none of
them used is a miss. So the log fills with no report by hand. The log is a measure: it
never fails an answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from heron.agent.answer import ToolUse
from heron.errors import HeronError, NotFound
from heron.skills import SkillContext, SkillHit, SkillIndex

log = logging.getLogger("heron.agent")


def skill_query(skills: SkillIndex, message: str) -> SkillContext | None:
    """The skills' context for ``message``, logged in the usage log (``None``: no skills
    indexed); whether it fits is ``fits``'s to say."""
    try:
        return skills.context_for(message)
    except NotFound:  # no skills indexed
        return None


def fits(context: SkillContext, threshold: float) -> bool:
    """Whether the best skill of ``context`` fits at all (``context_for`` returns its
    best, fitting or not)."""
    return bool(context.skills) and context.skills[0].dense_score >= threshold


def record_skill_use(
    skills: SkillIndex,
    message: str,
    query: SkillContext | None,
    prompted: Sequence[SkillHit],
    uses: Sequence[ToolUse],
    text: str,
) -> None:
    """Tell the skills' usage log which skills served the turn that asked ``message``:
    each one the model read (``read_skill`` among the tool ``uses``) and each ``prompted``
    one that the answer's ``text`` names, against the turn's skill ``query`` (made now,
    when the turn made none); skills ``prompted`` and none used, a miss."""
    read = [
        use.arguments["name"]
        for use in uses
        if use.name == "read_skill" and use.ok and isinstance(use.arguments.get("name"), str)
    ]
    named = [hit.name for hit in prompted if _names(text, hit.name)]
    used = list(dict.fromkeys([*read, *named]))
    if not used and not prompted:
        return  # nothing offered, nothing used: no outcome
    context = query or skill_query(skills, message)
    if context is None or context.query_id is None:  # no skills, or an index with no log
        return
    try:
        for name in used:
            skills.record_use(context.query_id, name)
        if not used:  # offered in the prompt, followed by none of them
            skills.record_miss(context.query_id)
    except HeronError as exc:  # the log is a measure: it never fails an answer
        log.warning("skill use not recorded: %s", exc)


def _names(text: str, name: str) -> bool:
    """Whether ``text`` names the skill ``name`` (``release-notes`` also as "release
    notes"), as a whole word: the answer followed it."""
    spoken = "[-_ ]".join(re.escape(word) for word in re.split(r"[-_ ]+", name))
    return re.search(rf"(?<![\w-]){spoken}(?![\w-])", text, re.IGNORECASE) is not None
