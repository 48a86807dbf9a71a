"""``heron.skills.tool``: the skill index as agent tools."""

from __future__ import annotations

from pathlib import Path

from heron.embed import Embedder
from heron.skills import SkillDir, SkillIndex
from heron.skills.tool import skill_tools
from heron.tools import ToolRegistry
from tests.conftest import sqlite_store


def test_skill_tools_use_the_skill_index(tmp_path: Path, embedder: Embedder) -> None:
    skill = tmp_path / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from merged changes.\n"
        "---\n# Steps\nCollect the merged pull requests.\n"
    )
    store = sqlite_store(tmp_path / "s.db", embedder)
    index = SkillIndex(store, [SkillDir(tmp_path / "skills", "test")])
    index.index()
    registry = ToolRegistry()
    for tool, handler in skill_tools(lambda: index):
        registry.add(tool, handler)
    hits = registry.call("search_skills", {"query": "write the release notes", "top_k": 1})
    assert hits[0]["name"] == "release-notes"
    assert "merged pull requests" in registry.call("read_skill", {"name": "release-notes"})["body"]
    index.close()
    store.close()
