"""The MCP server through the official SDK's client: streamable HTTP at ``/mcp`` and
``heron mcp`` over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from heron.libraries.tool import SEARCH_DOCS
from tests.server.conftest import Served, heron_env

#: What a client sees with the default HERON_MCP_TOOL_SAFETY=read: the retrieval tools,
#: the tool door, and the read-only JSON-RPC methods.
TOOLS = [
    "ask",
    "call_tool",
    "find_tools",
    "interventions_list",
    "jobs_events",
    "jobs_get",
    "jobs_list",
    "read_skill",
    "search_docs",
    "search_skills",
]
ROOT = Path(__file__).parents[2]


async def exercise(server: Any) -> dict[str, Any]:
    async with Client(server) as client:
        listed = await client.list_tools()
        # The client checks each structuredContent against the tool's outputSchema.
        docs = await client.call_tool("search_docs", {"query": "undo a rollout", "top_k": 2})
        skills = await client.call_tool("search_skills", {"query": "roll back", "top_k": 1})
        skill = await client.call_tool("read_skill", {"name": "rollback-deployment"})
        found = await client.call_tool("find_tools", {"query": "read a skill", "top_k": 2})
        called = await client.call_tool(
            "call_tool", {"name": "read_skill", "arguments": {"name": "rollback-deployment"}}
        )
        asked = await client.call_tool(
            "ask", {"message": "How do I undo a rollout?", "answer": "extractive"}
        )
        jobs = await client.call_tool("jobs_list", {})
        refused = await client.call_tool("jobs_create", {"prompt": "deploy"})
        bad = await client.call_tool("search_docs", {"query": "x", "library": "nope"})
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        link = next(c for c in docs.content if c.type == "resource_link")
        page = await client.read_resource(str(link.uri))
        escaped = await client.read_resource("heron://library/tiny/concepts%2Fpods")
        skill_page = await client.read_resource("heron://skill/rollback-deployment")
        prompts = await client.list_prompts()
        prompt = await client.get_prompt("rollback-deployment", {"task": "undo web's rollout"})
        missing = {}
        for uri in ("heron://library/tiny/concepts/nope", "heron://elsewhere/x"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            missing[uri] = raised.value
        with pytest.raises(MCPError) as no_prompt:
            await client.get_prompt("no-such-skill")
    return {
        "tools": listed.tools,
        "docs": docs,
        "skills": skills,
        "skill": skill,
        "found": found,
        "called": called,
        "asked": asked,
        "jobs": jobs,
        "refused": refused,
        "bad": bad,
        "resources": resources.resources,
        "templates": templates.resource_templates,
        "link": link,
        "page": page.contents[0],
        "escaped": escaped.contents[0],
        "skill_page": skill_page.contents[0],
        "prompts": prompts.prompts,
        "prompt": prompt,
        "missing": missing,
        "no_prompt": no_prompt.value,
    }


def check(seen: dict[str, Any]) -> None:
    tools = {t.name: t for t in seen["tools"]}
    assert sorted(tools) == TOOLS
    assert tools["search_docs"].input_schema == SEARCH_DOCS["input_schema"]
    assert tools["read_skill"].input_schema["required"] == ["name"]
    docs = seen["docs"]
    assert not docs.is_error
    assert docs.structured_content["results"][0]["citation"] == "(tiny, tasks/rollback)"
    assert json.loads(docs.content[0].text) == docs.structured_content["results"]
    assert "kubectl rollout undo" in seen["skill"].structured_content["body"]
    found = seen["found"].structured_content["tools"]
    assert found[0]["name"] == "read_skill" and found[0]["input_schema"]["required"] == ["name"]
    called = seen["called"].structured_content
    assert called["name"] == "read_skill" and "kubectl rollout undo" in called["result"]["body"]
    asked = seen["asked"].structured_content
    assert ("tiny", "tasks/rollback") in [(c["library"], c["page"]) for c in asked["citations"]]
    assert seen["jobs"].structured_content == {"results": []}
    refused = seen["refused"]  # a write: not offered at the default safety, not callable
    assert refused.is_error and "No tool 'jobs_create'" in refused.content[0].text
    bad = seen["bad"]
    assert bad.is_error and "nope" in bad.content[0].text
    check_surface(seen)


def check_surface(seen: dict[str, Any]) -> None:
    """Titles, every hint, output schemas, resources, templates, prompts, links."""
    for tool in seen["tools"]:
        hints = tool.annotations
        assert tool.title and hints.title == tool.title
        if tool.name == "call_tool":  # runs what it is given, wherever that lives
            assert (hints.read_only_hint, hints.destructive_hint) == (False, True)
            assert (hints.idempotent_hint, hints.open_world_hint) == (False, True)
            continue
        assert (hints.read_only_hint, hints.destructive_hint) == (True, False)
        assert hints.idempotent_hint == (tool.name != "ask") and not hints.open_world_hint
        if not tool.name.startswith(("jobs_", "interventions_", "ask")):
            assert tool.output_schema["type"] == "object" and tool.output_schema["required"]
    link = seen["link"]
    assert (str(link.uri), link.name) == (
        "heron://library/tiny/tasks/rollback",
        "(tiny, tasks/rollback)",
    )
    assert link.title == "Roll back a Deployment" and link.mime_type == "text/markdown"
    assert "kubectl rollout undo" in seen["page"].text and seen["page"].mime_type == "text/markdown"
    assert seen["escaped"].text.startswith("---\ntitle: Pods")
    (skill_link,) = [c for c in seen["skills"].content if c.type == "resource_link"]
    assert str(skill_link.uri) == "heron://skill/rollback-deployment"
    assert "kubectl rollout undo" in seen["skill_page"].text
    assert [str(r.uri) for r in seen["resources"]] == [
        "heron://skill/rollback-deployment",
        "heron://library/tiny/concepts/pods",
        "heron://library/tiny/concepts/secrets",
        "heron://library/tiny/tasks/rollback",
    ]
    assert [t.uri_template for t in seen["templates"]] == [
        "heron://library/{library}/{page}",
        "heron://skill/{name}",
    ]
    (prompt,) = seen["prompts"]
    assert prompt.name == "rollback-deployment" and prompt.arguments[0].name == "task"
    (message,) = seen["prompt"].messages
    assert message.role == "user" and "kubectl rollout undo" in message.content.text
    assert message.content.text.endswith("The task: undo web's rollout")
    gone = seen["missing"]["heron://library/tiny/concepts/nope"]
    assert "No page 'concepts/nope' in the index of library 'tiny'" in gone.message
    assert "resources/list names them" in seen["missing"]["heron://elsewhere/x"].message
    assert "No skill named 'no-such-skill'" in seen["no_prompt"].message


def test_mcp_over_streamable_http(served: Served) -> None:
    check(anyio.run(exercise, f"{served.url}/mcp"))


def test_mcp_over_stdio(heron_home: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "heron", "mcp"],
        env=heron_env(heron_home),
        cwd=ROOT,
    )
    check(anyio.run(exercise, params))
