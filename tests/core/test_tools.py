"""``heron.core.tools``: a tool's definition, read from OpenAI, Anthropic or MCP JSON."""

from __future__ import annotations

import doctest

import pytest

from heron.core import tools as model
from heron.core.errors import ToolInputError
from heron.core.tools import Tool, parse_tools

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def test_reads_openai_anthropic_and_mcp_formats() -> None:
    openai = [{"type": "function", "function": {"name": "w", "description": "d",
                                                "parameters": SCHEMA}}]  # fmt: skip
    anthropic = [{"name": "w", "description": "d", "input_schema": SCHEMA}]
    hints = {"readOnlyHint": False, "destructiveHint": True}
    mcp = {
        "tools": [{"name": "w", "description": "d", "inputSchema": SCHEMA, "annotations": hints}]
    }
    rpc = {"jsonrpc": "2.0", "id": 1, "result": mcp}
    for document in (openai, anthropic, mcp, rpc):
        (tool,) = parse_tools(document, "import:x.json")
        assert (tool.name, tool.description, tool.parameters) == ("w", "d", SCHEMA)
    # Destructive, and unannotated (the MCP spec's defaults): the most harmful level.
    assert parse_tools(mcp, "s")[0].safety == "execute"
    assert parse_tools(anthropic, "s")[0].safety == "execute"
    additive = {"name": "w", "annotations": {"destructiveHint": False}}
    assert parse_tools([additive], "s")[0].safety == "write"
    read_only = {"name": "w", "annotations": {"readOnlyHint": True, "destructiveHint": True}}
    assert parse_tools([read_only], "s")[0].safety == "read"


def test_examples_and_tags_are_read_and_round_trip() -> None:
    item = {"name": "w", "examples": ["  rain in Oslo? ", 3, ""], "tags": "weather"}
    (tool,) = parse_tools([item], "s")
    assert (tool.examples, tool.tags) == (("rain in Oslo?",), ())
    assert Tool.from_dict(tool.to_dict()) == tool


def test_bad_definitions_say_what_is_expected() -> None:
    with pytest.raises(ToolInputError, match="without a 'name'"):
        parse_tools([{"description": "x"}], "s")
    with pytest.raises(ToolInputError, match="OpenAI, Anthropic or MCP"):
        parse_tools("nope", "s")
    with pytest.raises(ToolInputError, match="Choose from: read, write, execute"):
        Tool("x", safety="danger")  # type: ignore[arg-type]


def test_text_holds_name_words_description_and_parameters() -> None:
    tool = Tool("getContactList", "All contacts.",
                {"properties": {"owner": {"description": "who owns them"}, "n": {}}})  # fmt: skip
    assert tool.text() == "get Contact List: All contacts. Parameters: owner (who owns them), n"
    assert doctest.testmod(model).failed == 0
