from __future__ import annotations

from pathlib import Path

import pytest

from heron.tools import ToolRegistry
from heron.tools.builtin import Workspace, register_builtins
from heron.tools.errors import ToolCallError, ToolInputError


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("top secret")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    (root / "outdir").symlink_to(tmp_path)
    registry = ToolRegistry()
    register_builtins(registry, root=root, commands=["sleep", "echo"], timeout=2)
    return registry


def test_file_tools_work_inside_the_root(registry: ToolRegistry) -> None:
    assert registry.call("list_files", {}) == ["escape", "outdir", "src/"]
    assert registry.call("list_files", {"path": "src", "recursive": True}) == ["src/a.txt"]
    assert registry.call("read_file", {"path": "src/a.txt"})["content"] == "hello"
    assert registry.call("write_file", {"path": "new/b.txt", "content": "hé"})["bytes"] == 3
    assert registry.call("read_file", {"path": "new/b.txt"})["content"] == "hé"
    assert registry.get("write_file").safety == "write"
    assert registry.get("run_command").safety == "execute"


@pytest.mark.parametrize(
    "path", ["../secret.txt", "/etc/passwd", "src/../../secret.txt", "escape", "outdir/secret.txt"]
)
def test_traversal_and_symlink_escape_are_refused(registry: ToolRegistry, path: str) -> None:
    with pytest.raises(ToolInputError, match=r"outside the workspace|absolute"):
        registry.call("read_file", {"path": path})
    with pytest.raises(ToolInputError, match=r"outside the workspace|absolute"):
        registry.call("write_file", {"path": path, "content": "x"})


def test_run_command_allowlist_and_timeout(registry: ToolRegistry) -> None:
    assert registry.call("run_command", {"command": "echo hi"})["stdout"] == "hi\n"
    with pytest.raises(ToolInputError, match=r"'rm' is not allowed\. Allowed: echo, sleep"):
        registry.call("run_command", {"command": "rm -rf /"})
    with pytest.raises(ToolCallError, match=r"did not finish within 0\.5 s"):
        registry.call("run_command", {"command": "sleep 5", "timeout": 0.5})


def test_search_docs_searches_the_libraries(
    registry: ToolRegistry, home: Path, tmp_path: Path
) -> None:
    assert "library" in registry.get("search_docs").parameters["properties"]
    docs = tmp_path / "lib" / "guide"
    docs.mkdir(parents=True)
    (docs / "secrets.md").write_text(
        "---\ntitle: Secrets\n---\n# Secrets\n\nKeep passwords in a Secret.\n"
    )
    from heron.libraries import add_library, index_library
    from heron.store import open_store

    add_library("mine", str(tmp_path / "lib"))
    store = open_store()
    index_library("mine", store)
    store.close()
    results = registry.call("search_docs", {"query": "where do passwords go", "library": "mine"})
    assert results[0]["citation"] == "(mine, guide/secrets)"
    wired = ToolRegistry()
    register_builtins(wired, docs_search=lambda arguments: [arguments])
    assert wired.call("search_docs", {"query": "x", "library": "k8s"}) == [
        {"query": "x", "library": "k8s"}
    ]


def test_skill_tools_use_the_skill_index(tmp_path: Path, embedder) -> None:
    from heron.skills import SkillDir, SkillIndex
    from heron.store import SQLiteStore

    skill = tmp_path / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from merged changes.\n"
        "---\n# Steps\nCollect the merged pull requests.\n"
    )
    index = SkillIndex(
        SQLiteStore(tmp_path / "s.db", embedder), [SkillDir(tmp_path / "skills", "test")]
    )
    index.index()
    registry = ToolRegistry()
    register_builtins(registry, skills=lambda: index)
    hits = registry.call("search_skills", {"query": "write the release notes", "top_k": 1})
    assert hits[0]["name"] == "release-notes"
    assert "merged pull requests" in registry.call("read_skill", {"name": "release-notes"})["body"]
    index.close()


def test_workspace_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ToolInputError, match="create it first"):
        Workspace(tmp_path / "nope")
