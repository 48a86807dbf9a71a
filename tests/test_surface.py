"""What a user sees of Heron, listed and compared with ``tests/data/surface.json``.

A move of code inside the house (issue 53) must change none of it:

- every CLI command path, with its options and arguments (the click tree of
  ``heron.cli.app.app``);
- every JSON-RPC method, its params (required or not), reach and key scope, and the
  error codes, from the server's OpenRPC document (what ``rpc.discover`` answers);
- every MCP tool of ``/mcp`` (under the highest ``HERON_MCP_TOOL_SAFETY``, so none is
  hidden) with its input schema's keys, and the resource templates, through the real
  ``mcp`` SDK's client talking to the server built in process;
- every HTTP route of the ASGI app with its methods (``/v1/...``, the page, the
  streams, ``/health`` ...);
- every ``HERON_*`` setting with its default where that is a plain value, and every
  ``HERON_*`` name the code reads from the environment itself.

A change shows as a diff of readable lines (``rpc agent.chat param message: required``).
When a change is meant (a new command, a new setting), rewrite the file and commit it
with the change::

    HERON_UPDATE_SURFACE=1 python -m pytest tests/test_surface.py

Nothing is started: the app is built, never served, over an empty ``HERON_HOME``.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import typing
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
from mcp.client.client import Client
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from starlette.routing import BaseRoute, Mount, Route

from heron.cli.app import app as cli_app
from heron.server import create_app
from heron.server.doors.mcp import server_of
from heron.settings import ENV_PREFIX, Settings, setting_names

HERON = Path(__file__).resolve().parent.parent / "heron"
GOLDEN = Path(__file__).parent / "data" / "surface.json"
UPDATE = "HERON_UPDATE_SURFACE"
#: A default that depends on the machine (``$XDG_DATA_HOME``, the host name).
COMPUTED = "(computed)"
#: Functions that read one variable of the environment by name.
ENV_READERS = {"getenv", "get", "pop", "setdefault"}


def cli_surface(command: Any, path: tuple[str, ...] = ("heron",)) -> dict[str, Any]:
    """``"heron library add"`` -> its options (every spelling) and arguments, for every
    command and group of the tree (typer's own copy of click: its classes are not
    ``click``'s, so the walk asks what a parameter is rather than its class)."""
    found = {
        " ".join(path): sorted(
            " / ".join(sorted([*p.opts, *p.secondary_opts]))
            if p.param_type_name == "option"
            else f"<{p.name}>" + ("" if p.required else "?") + ("..." if p.nargs == -1 else "")
            for p in command.params
        )
    }
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            found |= cli_surface(sub, (*path, name))
    return found


def rpc_surface(document: dict[str, Any]) -> dict[str, Any]:
    """The OpenRPC document's methods (params, reach, scope) and error codes."""
    methods = {
        m["name"]: {
            "params": {p["name"]: "required" if p["required"] else "optional" for p in m["params"]},
            "reach": m["x-reach"],
            "scope": m["x-scope"],
        }
        for m in document["methods"]
    }
    errors = {code: e["message"] for code, e in document["components"]["errors"].items()}
    return {"methods": methods, "errors": errors}


async def _mcp_lists(server: Any) -> tuple[Any, Any]:
    async with Client(server) as client:
        return await client.list_tools(), await client.list_resource_templates()


def mcp_surface(server: Any) -> dict[str, Any]:
    """Every tool a client of ``server`` lists, with its input schema's keys, and every
    resource template."""
    tools, templates = anyio.run(_mcp_lists, server)
    return {
        "tools": {
            t.name: {
                key: "required" if key in t.input_schema.get("required", []) else "optional"
                for key in t.input_schema.get("properties", {})
            }
            for t in tools.tools
        },
        "resource templates": sorted(t.uri_template for t in templates.resource_templates),
    }


def http_surface(routes: list[BaseRoute], prefix: str = "") -> dict[str, list[str]]:
    """``"/v1/models"`` -> ``["GET", "HEAD"]``; a route of every method lists ``*``."""
    found: dict[str, list[str]] = {}
    for route in routes:
        if isinstance(route, Mount):
            found |= http_surface(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            path = prefix + route.path
            found[path] = sorted({*found.get(path, []), *(route.methods or {"*"})})
    return found


def _default(field: Any) -> Any:
    if field.default is not PydanticUndefined:
        return field.default
    made = field.default_factory()
    return made if isinstance(made, list | dict) else COMPUTED


def settings_surface() -> dict[str, Any]:
    """``HERON_EMBEDDER`` -> ``"auto"``: every setting's variable and default."""
    fields: dict[str, FieldInfo] = {}
    for name, (section, field) in setting_names().items():
        model = Settings if section is None else Settings.model_fields[section].annotation
        fields[name] = typing.cast(type[BaseModel], model).model_fields[field]
    return {f"{ENV_PREFIX}{name.upper()}": _default(info) for name, info in fields.items()}


def _env_name(call: ast.Call) -> str | None:
    """The ``HERON_*`` literal ``os.environ.get("HERON_X")`` or ``os.getenv`` reads."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ENV_READERS and call.args):
        return None
    if func.attr != "getenv" and not (
        isinstance(func.value, ast.Attribute) and func.value.attr == "environ"
    ):
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and str(first.value).startswith(ENV_PREFIX):
        return str(first.value)
    return None


def env_reads(root: Path = HERON) -> list[str]:
    """Every ``HERON_*`` name a module of ``root`` reads from ``os.environ`` itself."""
    names: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (name := _env_name(node)):
                names.add(name)
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "environ"
                and isinstance(node.slice, ast.Constant)
                and str(node.slice.value).startswith(ENV_PREFIX)
            ):
                names.add(str(node.slice.value))
    return sorted(names)


def surface() -> dict[str, Any]:
    """Everything a user sees, with the settings of the environment."""
    app = create_app(Settings())
    return {
        "cli": cli_surface(typer.main.get_command(cli_app)),
        "rpc": rpc_surface(app.state.registry.openrpc()),
        "mcp": mcp_surface(server_of(app.state.runtime)),
        "http": http_surface(list(app.routes)),
        "settings": settings_surface(),
        "environment": env_reads(),
    }


def lines(value: Any, path: str = "") -> list[str]:
    """A nested value as one line per leaf: ``rpc methods agent.chat reach: context``."""
    if isinstance(value, dict):
        return [line for key in sorted(value) for line in lines(value[key], f"{path} {key}")]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [f"{path.strip()}: {v}" for v in value]
    return [f"{path.strip()}: {json.dumps(value)}"]


def test_what_a_user_sees_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    update = os.environ.get(UPDATE)
    for name in [n for n in os.environ if n.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    monkeypatch.setenv("HERON_MCP_TOOL_SAFETY", "execute")  # every MCP tool listed
    found = json.loads(json.dumps(surface()))  # keys as JSON writes them
    if update:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    diff = difflib.unified_diff(
        lines(expected), lines(found), "tests/data/surface.json", "this tree", lineterm="", n=0
    )
    changes = "\n".join(diff)
    if changes:
        pytest.fail(
            f"What a user sees changed; if that is meant, run {UPDATE}=1 on this test "
            f"and commit the file:\n{changes}",
            pytrace=False,
        )


def test_the_surface_names_what_it_must() -> None:
    """The listing reaches every part it claims to: a walk that found nothing would
    compare empty with empty."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert "heron library add" in golden["cli"]
    assert "rpc.discover" in golden["rpc"]["methods"]
    assert "search_docs" in golden["mcp"]["tools"]
    assert "/v1/chat/completions" in golden["http"] and "/" in golden["http"]
    assert golden["settings"]["HERON_EMBEDDER"] == "auto"
    assert "HERON_CONFIG" in golden["environment"]
