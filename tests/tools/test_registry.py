"""``heron.tools.registry``: tools with their handlers, and tools imported into the store."""

from __future__ import annotations

import json

import pytest

from heron.core.errors import ToolCallError, ToolInputError, UnknownTool
from heron.core.tools import Tool
from heron.tools.registry import ToolRegistry, load_imported, read_tool_file, save_imported

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def test_registry_calls_handlers_and_names_the_fix() -> None:
    registry = ToolRegistry()
    registry.add(Tool("add"), lambda a: a["x"] + 1)
    registry.add(Tool("remote", source="import:t.json"))
    assert registry.call("add", {"x": 1}) == 2
    with pytest.raises(ToolCallError, match="call it where it lives"):
        registry.call("remote", {})
    with pytest.raises(UnknownTool, match="Did you mean: add"):
        registry.get("ad")
    with pytest.raises(ToolInputError, match="clashes"):
        registry.add(Tool("add", source="mcp:x"), replace=False)
    assert registry.remove_source("import:t.json") == 1 and len(registry) == 1


def test_runnable_says_which_tools_have_a_handler_here() -> None:
    registry = ToolRegistry()
    registry.add(Tool("add"), lambda a: a["x"] + 1)
    registry.add(Tool("remote", source="import:t.json"))
    assert registry.runnable("add") and not registry.runnable("remote")


def test_imported_tools_persist_in_the_store(tmp_path, store) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "w", "description": "d", "input_schema": SCHEMA}]))
    tools = read_tool_file(path)
    assert tools[0].source == "import:tools.json"
    assert save_imported(store, tools) == 1
    assert load_imported(store) == tools
    with pytest.raises(ToolInputError, match="No tool file"):
        read_tool_file(tmp_path / "missing.json")
