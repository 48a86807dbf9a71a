from __future__ import annotations

from pathlib import Path

import pytest

from heron.core.errors import ToolCallError, ToolInputError
from heron.core.workspace import Workspace
from heron.programs import load_policy
from heron.tools import ToolRegistry
from heron.tools.builtin import register_builtins


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("top secret")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    (root / "outdir").symlink_to(tmp_path)
    registry = ToolRegistry()
    policy = load_policy(None)  # the built-in table
    register_builtins(registry, root=root, commands=["sleep", "echo"], timeout=2, policy=policy)
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


def test_builtins_are_the_workspace_tools_alone(registry: ToolRegistry) -> None:
    # search_docs and the skill tools are the capabilities' own (heron.wiring.open_tools).
    assert [t.name for t in registry.tools()] == [
        "list_files",
        "read_file",
        "run_command",
        "write_file",
    ]


def test_workspace_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ToolInputError, match="create it first"):
        Workspace(tmp_path / "nope", policy=load_policy(None))
