"""``search_skills`` and ``read_skill``: the skill index as agent tools.

>>> registry.add(*skill_tools(lambda: index)[0])                    # doctest: +SKIP
>>> registry.call("search_skills", {"query": "write release notes"})  # doctest: +SKIP
[{'name': 'release-notes', ...}]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heron.core.tools import Handler, Tool, argument, object_schema
from heron.skills.index import SkillIndex


def skill_tools(skills: Callable[[], SkillIndex]) -> list[tuple[Tool, Handler]]:
    """``search_skills`` and ``read_skill`` over ``skills()``, a ``SkillIndex`` opened on
    first use (``heron.skills.open_skills``)."""

    def search(a: dict[str, Any]) -> list[dict[str, Any]]:
        return [h.to_dict() for h in skills().search(argument(a, "query"), int(a.get("top_k", 5)))]

    def read(a: dict[str, Any]) -> dict[str, Any]:
        skill = skills().show(argument(a, "name"))
        return {
            "name": skill.name,
            "description": skill.description,
            "path": str(skill.path),
            "body": skill.body,
        }

    return [
        (
            Tool(
                "search_skills",
                "Find the skills (step-by-step procedures) that fit a task.",
                object_schema(
                    ["query"],
                    query=("string", "what the task is"),
                    top_k=("integer", "how many skills, default 5"),
                ),
                tags=("skills",),
            ),
            search,
        ),
        (
            Tool(
                "read_skill",
                "Read one skill's full instructions by name.",
                object_schema(["name"], name=("string", "the skill's name, from search_skills")),
                tags=("skills",),
            ),
            read,
        ),
    ]
